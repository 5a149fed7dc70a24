// Copies each presented picture (a VideoFrame the page transfers here) whole into packed
// I420 and uploads it, off the page's main thread: at 1280x720 and 60 fps, copying and
// uploading on the main thread kept it busy enough that pictures were presented with no
// requestVideoFrameCallback for them, and so went unrecorded. The page keeps the count of
// uploads under way; every message it sends gets one answer when that upload is over.
'use strict';

// The frame's planes packed (no row padding): I420 only.
function packI420(buf, layout, w, h) {
  const sizes = [[w, h], [w / 2, h / 2], [w / 2, h / 2]];
  if (layout.every((p, i) => p.stride === sizes[i][0])
      && layout[1].offset === w * h && layout[2].offset === w * h + (w / 2) * (h / 2)) {
    return buf.subarray(0, w * h * 3 / 2);
  }
  const out = new Uint8Array(w * h * 3 / 2);
  let at = 0;
  layout.forEach((p, i) => {
    const [pw, ph] = sizes[i];
    for (let row = 0; row < ph; row++) {
      out.set(buf.subarray(p.offset + row * p.stride, p.offset + row * p.stride + pw), at);
      at += pw;
    }
  });
  return out;
}

onmessage = async (e) => {
  const { frame, query } = e.data;
  try {
    const w = frame.visibleRect.width;
    const h = frame.visibleRect.height;
    const buf = new Uint8Array(frame.allocationSize());
    const layout = await frame.copyTo(buf);
    frame.close();
    await fetch(`/shown?${query}`, { method: 'POST', body: packI420(buf, layout, w, h) });
    postMessage({});
  } catch (err) {
    try { frame.close(); } catch (_) { /* already closed */ }
    postMessage({ failed: `${err && err.message ? err.message : err}` });
  }
};
