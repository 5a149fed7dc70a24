// The salsify dashboard page: samples arrive as server-sent events (a live call as it runs,
// a recorded run all at once) and are drawn on canvases as line charts around a time cursor.
// What costs a browser CPU is kept small: a live page draws at most twice a second, a chart
// only when what it shows changed, nothing while the page is hidden, and the legends and
// totals are set in place, only when their text changes.
"use strict";

// Each chart: its series (name on the wire, label), unit, and whether its axis starts at 0.
const CHARTS = [
  { id: "rates", title: "Link and sender", unit: "kb/s", zero: true, series: [
    ["link.capacity_kbps", "link capacity"], ["link.delivered_kbps", "delivered by the link"],
    ["send.sent_kbps", "sent"], ["send.target_kbps", "encoder target"]] },
  { id: "queue", title: "Link queue", unit: "kB", zero: true, series: [
    ["link.queue_kB", "queued (most in the bin)"]] },
  { id: "sizes", title: "Frame sizes", unit: "kB", zero: true, series: [
    ["send.frame_kB", "mean"], ["send.frame_max_kB", "largest"], ["send.budget_kB", "Salsify's budget"]] },
  { id: "choices", title: "Options chosen, skipped, dropped", unit: "per s", zero: true, series: [
    ["send.better", "better"], ["send.worse", "worse"], ["send.forced", "forced worse"],
    ["send.only", "only option"], ["send.skipped", "skipped"], ["send.dropped", "dropped"]] },
  { id: "quantizer", title: "Quantizer of frames sent", unit: "q", zero: false, series: [
    ["send.quantizer", "mean"]] },
  { id: "resolution", title: "Resolution shown", unit: "lines", zero: true, series: [
    ["recv.height", "picture height"]] },
  { id: "fps", title: "Frames shown", unit: "per s", zero: true, series: [
    ["recv.shown", "shown"]] },
  { id: "delay", title: "Per-frame delay, capture to display", unit: "ms", zero: true, series: [
    ["recv.delay_ms", "mean"], ["recv.delay_max_ms", "largest"]] },
  { id: "ssim", title: "Quality shown (SSIM)", unit: "dB", zero: false, series: [
    ["recv.ssim_db", "mean"]] },
  { id: "losses", title: "Losses and refused datagrams", unit: "per s", zero: true, series: [
    ["recv.lost", "frames lost"], ["recv.refused", "datagrams refused"], ["link.drops", "dropped by the link"]] },
  { id: "audio-delay", title: "Audio: mouth-to-ear delay", unit: "ms", zero: true, series: [
    ["recv.audio_delay_ms", "mean"], ["recv.audio_delay_max_ms", "largest"]] },
  { id: "audio-frames", title: "Audio frames played without their packet", unit: "per s", zero: true, series: [
    ["recv.audio_missing", "no packet in time (concealed or DTX silence)"],
    ["recv.audio_stretched", "inserted (growing the delay or waiting out a stall)"]] },
];
const TOTALS = [["recv.shown", "frames shown"], ["send.frames", "frames sent"],
  ["recv.lost", "lost"], ["recv.refused", "refused"]];
const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"];

const token = new URLSearchParams(location.search).get("token");
const probing = new URLSearchParams(location.search).has("probe");
const q = (path) => token ? `${path}${path.includes("?") ? "&" : "?"}token=${token}` : path;
const $ = (id) => document.getElementById(id);

const data = { t: [], v: {}, tot: [], meta: {}, ended: false, picture: 0, frame: null };
let dirty = true;

function addSamples(list) {
  for (const s of list) {
    const i = data.t.length;
    data.t.push(s.t);
    for (const [k, x] of Object.entries(s.v)) {
      if (!data.v[k]) data.v[k] = [];
      data.v[k][i] = x;
    }
    data.tot.push(s.tot);
  }
  dirty = true;
}

// The index of the last sample at or before time `t`.
function indexAt(t) {
  let lo = 0, hi = data.t.length - 1;
  if (hi < 0 || data.t[0] > t) return -1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (data.t[mid] <= t) lo = mid; else hi = mid - 1;
  }
  return lo;
}

function fmt(x) {
  if (x === undefined || x === null || Number.isNaN(x)) return "-";
  const a = Math.abs(x);
  return a >= 100 ? x.toFixed(0) : a >= 10 ? x.toFixed(1) : x.toFixed(2);
}

// The value of series `k` at sample `at`, or its last one before (a mean or a gauge has no
// point in a bin where nothing was reported; the legend keeps the last one).
function valueAt(k, at) {
  const v = data.v[k];
  for (let i = at; i >= 0; i--) if (v[i] !== undefined) return v[i];
  return undefined;
}

// Axis ticks: round numbers ("nice": 1, 2 or 5 times a power of ten apart) covering
// [lo, hi], about four of them; a constant series gets a span around its value.
function niceTicks(lo, hi) {
  if (!(hi >= lo)) { lo = 0; hi = 1; }
  if (hi === lo) { const pad = Math.abs(lo) > 0 ? Math.abs(lo) * 0.1 : 1; lo -= lo === 0 ? 0 : pad; hi += pad; }
  const raw = (hi - lo) / 3;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw * 0.999);
  const first = Math.floor(lo / step + 1e-9) * step, last = Math.ceil(hi / step - 1e-9) * step;
  const ticks = [];
  for (let v = first; v <= last + step / 2; v += step) ticks.push(Math.abs(v) < step / 1e6 ? 0 : v);
  const places = (unit) => Math.max(0, -Math.floor(Math.log10(step / unit) + 1e-9));
  // An axis reaching 10 000 is marked in thousands ("k") throughout.
  const thousands = Math.max(Math.abs(first), Math.abs(last)) >= 10000;
  const label = (v) => v === 0 ? "0"
    : thousands ? `${(v / 1000).toFixed(places(1000))}k` : v.toFixed(Math.min(places(1), 3));
  return { lo: first, hi: last, ticks, label };
}

// A scheme's gauge carries its unit in its name (`srtt_ms`, `cwnd_packets`: the schemes'
// convention); names without one are counts, an index or a factor.
function gaugeUnit(name) {
  const suffixes = [["_ms", "ms"], ["_kbps", "kb/s"], ["_bytes", "bytes"], ["_packets", "packets"],
    ["_frames", "frames"], ["_kB", "kB"], ["_s", "s"]];
  for (const [end, unit] of suffixes) if (name.endsWith(end)) return unit;
  if (name === "quality" || name === "quality_floor") return "quantizer index";
  if (name === "fragments_in_flight") return "fragments";
  if (name === "alpha") return "factor";
  return "count";
}

// Scheme gauges are not known in advance: one chart per `scheme.` series seen.
function chartList() {
  const scheme = Object.keys(data.v).filter((k) => k.startsWith("scheme.")).sort();
  return CHARTS.concat(scheme.map((k) => ({
    id: "s-" + k.slice(7), title: `${data.meta.scheme || "scheme"}: ${k.slice(7)}`,
    unit: gaugeUnit(k.slice(7)), zero: false, series: [[k, k.slice(7)]] })));
}

// What each chart holds: its box, canvas, legend values, and what it drew last.
const charts = new Map();

// The box of `spec`'s chart, made the first time one of its series is present.
function chartBox(spec, present) {
  let c = charts.get(spec.id);
  if (!c) {
    if (present.length === 0) return null;
    const box = document.createElement("div");
    box.className = "chart"; box.id = "chart-" + spec.id;
    box.innerHTML = `<h2>${spec.title} <small>${spec.unit}</small></h2><canvas></canvas><div class="legend"></div>`;
    $("charts").appendChild(box);
    c = { box, canvas: box.querySelector("canvas"), legend: box.querySelector(".legend"),
      keys: "", items: new Map(), drawn: "", points: 0, ticks: [] };
    charts.set(spec.id, c);
  }
  // The legend is remade only when a series appears; its values are set in place.
  const keys = present.map(([k]) => k).join(" ");
  if (keys !== c.keys) {
    c.keys = keys; c.legend.textContent = ""; c.items.clear();
    spec.series.forEach(([k, label], n) => {
      if (!data.v[k]) return;
      const item = document.createElement("span");
      item.innerHTML = `<i style="background:${COLOURS[n % COLOURS.length]}"></i>${label} <b data-series="${k}">-</b>`;
      c.legend.appendChild(item);
      c.items.set(k, item.querySelector("b"));
    });
  }
  return c;
}

// Draws one chart over [from, to] with the cursor at `to` on its canvas of `w` x `h` CSS
// pixels, unless what it would draw is what it drew last; sets the legend's values at `at`.
function drawChart(spec, c, w, h, from, to, at) {
  const i0 = Math.max(0, indexAt(from)), i1 = indexAt(to);
  for (const [k, b] of c.items) {
    const text = fmt(at >= 0 ? valueAt(k, at) : undefined);
    if (b.textContent !== text) b.textContent = text;
  }
  const key = `${c.keys}|${i0}|${i1}|${from}|${to}|${w}|${h}`;
  if (key === c.drawn) return;
  c.drawn = key;
  const ratio = window.devicePixelRatio || 1;
  const canvas = c.canvas;
  if (canvas.width !== Math.round(w * ratio) || canvas.height !== Math.round(h * ratio)) {
    canvas.width = Math.round(w * ratio); canvas.height = Math.round(h * ratio);
  }
  const g = canvas.getContext("2d");
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, w, h);
  const [left, bottom] = [34, 14];
  let low = spec.zero ? 0 : Infinity, high = -Infinity;
  for (const k of c.items.keys())
    for (let i = i0; i <= i1; i++) {
      const x = data.v[k][i];
      if (x !== undefined) { low = Math.min(low, x); high = Math.max(high, x); }
    }
  const axis = niceTicks(low, high);
  const [lo, hi] = [axis.lo, axis.hi];
  const X = (t) => left + (w - left - 2) * (t - from) / Math.max(1e-9, to - from);
  const Y = (v) => 9 + (h - bottom - 11) * (1 - (v - lo) / (hi - lo));
  g.lineWidth = 1; g.strokeStyle = "#ccc"; g.fillStyle = "#777"; g.font = "10px system-ui, sans-serif";
  g.beginPath(); g.moveTo(left, h - bottom + .5); g.lineTo(w, h - bottom + .5); g.stroke();
  g.globalAlpha = .4;
  g.beginPath();
  for (const v of axis.ticks) { g.moveTo(left, Math.round(Y(v)) + .5); g.lineTo(w, Math.round(Y(v)) + .5); }
  g.stroke();
  g.globalAlpha = 1;
  for (const v of axis.ticks) g.fillText(axis.label(v), 2, Y(v) + 3);
  g.fillText(spec.unit, left + 3, 8);
  c.ticks = axis.ticks.map(axis.label);
  g.fillText(`${from.toFixed(0)} s`, left, h - 2);
  g.textAlign = "right"; g.fillText(`${secondsLabel(to)} s`, w - 2, h - 2); g.textAlign = "left";
  // The number of points of the longest line drawn (the probe counts charts with a line).
  let most = 0;
  g.lineWidth = 1.5; g.lineJoin = "round";
  spec.series.forEach(([k], n) => {
    if (!c.items.has(k)) return;
    const v = data.v[k];
    let points = 0;
    g.beginPath();
    for (let i = i0; i <= i1; i++) {
      if (v[i] === undefined) continue;
      if (points++ === 0) g.moveTo(X(data.t[i]), Y(v[i])); else g.lineTo(X(data.t[i]), Y(v[i]));
    }
    g.strokeStyle = COLOURS[n % COLOURS.length];
    g.stroke();
    most = Math.max(most, points);
  });
  c.points = most;
  g.lineWidth = 1; g.strokeStyle = "#c33"; g.setLineDash([3, 2]);
  g.beginPath(); g.moveTo(X(to) - .5, 0); g.lineTo(X(to) - .5, h - bottom); g.stroke();
  g.setLineDash([]);
}

// Seconds on the time axis: whole, or to a tenth when the run ended between two.
function secondsLabel(t) {
  return Math.abs(t - Math.round(t)) < 0.05 ? t.toFixed(0) : t.toFixed(1);
}

// Sets a text (or a property) only when it changes: an unchanged page is not laid out again.
function setText(id, text) { const e = $(id); if (e.textContent !== text) e.textContent = text; }

function cursorTime() {
  const end = data.t.length ? data.t[data.t.length - 1] : 0;
  const c = $("cursor");
  if (Number(c.max) !== end) c.max = end;
  if ($("follow").checked && Number(c.value) !== end) c.value = end;
  return Math.min(Number(c.value), end);
}

// Live pages draw at most this often (a change waits for the next drawing); what the user
// does (the cursor, the span) and the end are drawn at once.
const DRAW_EVERY_MS = 500;
let lastRender = -1e9;
function render(now) {
  if (!dirty || document.hidden) return;
  if (!now && performance.now() - lastRender < DRAW_EVERY_MS) return;
  dirty = false;
  lastRender = performance.now();
  // Boxes first (made once), then every canvas's size (no new layout unless a box was
  // made), then the writes.
  const shown = [];
  for (const spec of chartList()) {
    const c = chartBox(spec, spec.series.filter(([k]) => data.v[k]));
    if (c) shown.push([spec, c]);
  }
  const sizes = shown.map(([, c]) => [c.canvas.clientWidth, c.canvas.clientHeight]);
  const to = cursorTime();
  const span = Number($("span").value);
  const from = span > 0 ? Math.max(0, to - span) : 0;
  const at = indexAt(to);
  shown.forEach(([spec, c], n) => drawChart(spec, c, sizes[n][0], sizes[n][1], from, Math.max(to, from + 1), at));
  setText("cursor-time", `${to.toFixed(2)} s`);
  const tot = at >= 0 ? data.tot[at] : {};
  if (!$("totals").firstChild)
    $("totals").innerHTML = TOTALS.map(([k, label]) => `<dt>${label}</dt><dd data-total="${k}">-</dd>`).join("");
  for (const [k] of TOTALS) {
    const d = document.querySelector(`[data-total="${k}"]`);
    const text = tot[k] === undefined ? "-" : String(Math.round(tot[k]));
    if (d.textContent !== text) d.textContent = text;
  }
}

function showMeta(meta) {
  data.meta = meta;
  $("title").textContent = meta.title || "salsify";
  document.title = `salsify: ${meta.title || "dashboard"}`;
  $("status").textContent = meta.mode === "replay" ? "replay" : "live";
  $("status").className = "status " + (meta.mode === "replay" ? "replay" : "live");
  const rows = Object.entries(meta.summary || {}).filter(([, v]) => typeof v === "number");
  $("summary").innerHTML = rows.length ? "<caption>summary.json</caption>" + rows.map(([k, v]) =>
    `<tr><td>${k}</td><td data-summary="${k}">${Number.isInteger(v) ? v : v.toFixed(2)}</td></tr>`).join("") : "";
  if (meta.mode === "replay") {
    $("picture-frame").style.display = "none";
    $("picture-caption").textContent = meta.picture_note || "no pictures in a recorded run";
  }
  dirty = true;
}

// A picture: decoded off the page and swapped in whole once loaded, so the page never shows
// a half-loaded or broken one (and nothing before the first); captioned with the frame
// number the call gave it. A picture that finishes after a newer one is dropped.
function showPicture(p) {
  const next = new Image();
  next.onload = () => {
    if (p.seq <= data.picture) return;
    const img = $("picture");
    next.id = img.id;
    next.alt = img.alt;
    next.classList.add("loaded");
    img.replaceWith(next);
    data.picture = p.seq; data.frame = p.frame;
    const what = data.meta.picture_note || "last shown picture";
    setText("picture-caption", p.frame === null || p.frame === undefined ? what : `${what}: frame ${p.frame}`);
  };
  next.src = q(`picture.jpg?seq=${p.seq}`);
}

// What the page shows, read back from its own DOM, for tests and scripts (`?probe`).
function probe(ended) {
  const values = {};
  document.querySelectorAll(".legend b[data-series]").forEach((b) => { values[b.dataset.series] = b.textContent; });
  const totals = {};
  document.querySelectorAll("[data-total]").forEach((d) => { totals[d.dataset.total] = d.textContent; });
  const summary = {};
  document.querySelectorAll("[data-summary]").forEach((d) => { summary[d.dataset.summary] = d.textContent; });
  // Charts whose last drawing has a line of at least two points (counted as it was drawn).
  const drawn = [...charts.values()].filter((c) => c.points >= 2).length;
  const ticks = {};
  for (const [id, c] of charts) ticks[id] = c.ticks;
  const units = {};
  document.querySelectorAll(".chart").forEach((b) => { units[b.id.slice(6)] = b.querySelector("h2 small").textContent; });
  const img = $("picture");
  const report = { ended, charts: drawn, values, totals, summary, picture: data.picture,
    frame: data.frame, caption: $("picture-caption").textContent, ticks, units,
    picture_broken: img.classList.contains("loaded") ? !(img.complete && img.naturalWidth > 0) : getComputedStyle(img).display !== "none",
    cursor: $("cursor-time").textContent, samples: data.t.length };
  fetch(q("probe"), { method: "POST", body: JSON.stringify(report) }).catch(() => {});
}

function connect() {
  const events = new EventSource(q("events"));
  events.addEventListener("meta", (e) => showMeta(JSON.parse(e.data)));
  events.addEventListener("samples", (e) => {
    addSamples(JSON.parse(e.data));
    // Drawn at once when the last drawing is old enough (timers alone may be held back, as
    // in a headless screenshot), else by the next tick.
    render(false);
  });
  events.addEventListener("picture", (e) => showPicture(JSON.parse(e.data)));
  events.addEventListener("end", () => {
    events.close();
    data.ended = true;
    if (data.meta.mode !== "replay") { $("status").textContent = "ended"; $("status").className = "status ended"; }
    dirty = true; render(true);
    probe(true);
  });
}

const redraw = () => { dirty = true; render(true); };
$("cursor").addEventListener("input", () => { $("follow").checked = false; redraw(); });
$("follow").addEventListener("change", redraw);
$("span").addEventListener("change", redraw);
window.addEventListener("resize", () => { dirty = true; });
// A hidden page draws nothing; shown again, it draws what it missed at once.
document.addEventListener("visibilitychange", redraw);
setInterval(() => render(false), DRAW_EVERY_MS / 2);
if (probing) setInterval(() => probe(data.ended), 500);
connect();
