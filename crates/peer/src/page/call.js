// A call (VP8 unless the server says another codec) between two RTCPeerConnections of this page, the sender fed by the (fake,
// barcoded) camera, every ICE candidate rewritten by the server so that both directions cross
// `salsify link`. Per frame it posts to the server: the camera picture's capture timestamp
// and barcode band (a MediaStreamTrackProcessor on a clone of the camera track), and every
// picture the receiving <video> presents, whole, with its expected display time
// (requestVideoFrameCallback). With audio (config.audio), the microphone's track and the
// remote track as played are recorded too (audioTaps). getStats once a second. Times go to the server on the host's
// monotonic clock (camera timestamps already are; page times are mapped by /clock pings).
'use strict';

const BAND_ROWS = 16;
const MAX_INFLIGHT_CAPTURED = 64;
// Camera frames the processor queues while the page is busy (its default drops them).
const CAPTURE_QUEUE = 60;
const MAX_INFLIGHT_SHOWN = 8;

function event(kind, fields) {
  return fetch('/event', {
    method: 'POST',
    body: JSON.stringify(Object.assign({ kind }, fields || {})),
  }).catch(() => {});
}

function fail(where, err) {
  event('error', { message: `${where}: ${err && err.message ? err.message : err}` });
}

// A per-frame failure (e.g. no picture to copy while the decoder changes resolution): that
// frame is not recorded; the count goes to the server, once per kind and second at most.
const warnings = {};
function warn(where, err) {
  const message = `${where}: ${err && err.message ? err.message : err}`;
  const w = warnings[message] || (warnings[message] = { count: 0, last: 0 });
  w.count += 1;
  const now = performance.now();
  if (now - w.last >= 1000) {
    w.last = now;
    event('warning', { message, count: w.count });
  }
}

window.addEventListener('error', (e) => fail('page', e.message));
window.addEventListener('unhandledrejection', (e) => fail('page', e.reason));

// Posts `body` unless `limit` uploads of this kind are already under way.
function poster(limit) {
  let inflight = 0;
  let skipped = 0;
  return {
    // Whether the upload was started.
    post(path, body) {
      if (inflight >= limit) {
        skipped += 1;
        return false;
      }
      inflight += 1;
      fetch(path, { method: 'POST', body })
        .catch(() => {})
        .finally(() => { inflight -= 1; });
      return true;
    },
    get skipped() { return skipped; },
  };
}

// Offset (µs) that maps performance.now() (ms) onto the server's monotonic clock (µs): the
// sample with the shortest round trip wins.
async function syncClock(samples) {
  let best = null;
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    const reply = await fetch('/clock', { cache: 'no-store' });
    const host = Number(await reply.text());
    const t1 = performance.now();
    const rtt = t1 - t0;
    if (!best || rtt < best.rtt) best = { rtt, offset: host - ((t0 + t1) / 2) * 1000 };
  }
  return best;
}

// Collects a peer connection's candidates until gathering completes.
function gather(pc) {
  const found = [];
  return {
    found,
    done: new Promise((resolve) => {
      pc.onicecandidate = (e) => {
        if (e.candidate && e.candidate.candidate) {
          found.push({ candidate: e.candidate.candidate, sdpMid: e.candidate.sdpMid });
        } else if (!e.candidate) {
          resolve();
        }
      };
      setTimeout(resolve, 5000);
    }),
  };
}

async function captureLoop(track, clock) {
  const reader = new MediaStreamTrackProcessor({ track, maxBufferSize: CAPTURE_QUEUE })
    .readable.getReader();
  const uploads = poster(MAX_INFLIGHT_CAPTURED);
  for (;;) {
    const { value: frame, done } = await reader.read();
    if (done) return;
    try {
      const readAt = Math.round(performance.now() * 1000 + clock.offset);
      const w = frame.visibleRect.width;
      if (!['I420', 'I420A', 'NV12'].includes(frame.format)) {
        throw new Error(`camera frames are ${frame.format}, not I420 or NV12`);
      }
      const rect = { x: 0, y: 0, width: w, height: BAND_ROWS };
      const buf = new Uint8Array(frame.allocationSize({ rect }));
      const layout = await frame.copyTo(buf, { rect });
      const luma = new Uint8Array(w * BAND_ROWS);
      for (let row = 0; row < BAND_ROWS; row++) {
        const from = layout[0].offset + row * layout[0].stride;
        luma.set(buf.subarray(from, from + w), row * w);
      }
      if (!uploads.post(`/captured?ts=${frame.timestamp}&read=${readAt}&w=${w}`, luma)) {
        warn('capture', 'too many uploads under way: a camera picture not recorded');
      }
    } catch (e) {
      warn('capture', e);
    } finally {
      frame.close();
    }
  }
}

// Every presented picture, with its display time, handed whole to a worker
// (shown_worker.js) that copies and uploads it, so the main thread only takes the picture.
function displayLoop(video, clock) {
  const worker = new Worker('/shown-worker.js');
  let inflight = 0;
  let lastPresented = null;
  // Presentations not recorded since the last one that was (no picture, or no upload slot).
  let unrecorded = 0;
  worker.onmessage = (e) => {
    inflight -= 1;
    if (e.data.failed) {
      unrecorded += 1;
      warn('display', e.data.failed);
    }
  };
  const onFrame = (now, md) => {
    video.requestVideoFrameCallback(onFrame);
    const skipped = lastPresented === null ? 0 : md.presentedFrames - lastPresented - 1;
    // Said apart from the other causes, so a busy page is told from a slow upload.
    if (skipped > 0) warn('display', 'pictures presented with no callback (the page was busy)');
    unrecorded += skipped;
    lastPresented = md.presentedFrames;
    let frame;
    try {
      frame = new VideoFrame(video);
      // On a busy page the element may already show a newer picture than the one the
      // callback describes: that picture would get this one's display time, so skip it.
      if (Math.abs(frame.timestamp - md.mediaTime * 1e6) > 1000) {
        throw new Error('the video element moved on to a newer picture before the copy');
      }
      if (frame.format !== 'I420') throw new Error(`decoded frames are ${frame.format}, not I420`);
      if (inflight >= MAX_INFLIGHT_SHOWN) {
        unrecorded += 1;
        warn('display', 'too many uploads under way: a presented picture not recorded');
        return;
      }
      const display = Math.round(md.expectedDisplayTime * 1000 + clock.offset);
      const received = md.receiveTime ? Math.round(md.receiveTime * 1000 + clock.offset) : '';
      const query = `display=${display}&received=${received}&w=${frame.visibleRect.width}`
        + `&h=${frame.visibleRect.height}&rtp=${md.rtpTimestamp}&missed=${unrecorded}`;
      inflight += 1;
      worker.postMessage({ frame, query }, [frame]);
      frame = null; // the worker has it and closes it
      unrecorded = 0;
    } catch (e) {
      unrecorded += 1;
      warn('display', e);
    } finally {
      if (frame) frame.close();
    }
  };
  video.requestVideoFrameCallback(onFrame);
}

// The call's audio, when asked: the microphone's track as the sender captured it (the
// "mouth") and the remote track as the receiving page plays it (the "ear"), both recorded
// through one AudioContext at 48 kHz, so both recordings count their samples on one clock.
// Each 100 ms chunk goes to the server as 16-bit PCM with its first sample's context frame
// and that frame's time on the host's monotonic clock (one mapping for both recordings: a
// mark's delay, a difference of two such times, is exact in context frames).
async function audioTaps() {
  const ctx = new AudioContext({ sampleRate: 48000, latencyHint: 'interactive' });
  await ctx.audioWorklet.addModule('/audio-tap.js');
  if (ctx.state !== 'running') await ctx.resume();
  const silent = ctx.createGain();
  silent.gain.value = 0;
  silent.connect(ctx.destination);
  let mapping = null;
  // Host µs of context frame `frame`, from one (context time, performance time) pair.
  const hostUs = (frame) => {
    if (!mapping) {
      const stamp = ctx.getOutputTimestamp();
      mapping = { contextTime: stamp.contextTime, performanceTime: stamp.performanceTime };
      event('audio_clock', { mapping, base_latency: ctx.baseLatency, output_latency: ctx.outputLatency,
        sample_rate: ctx.sampleRate });
    }
    const ms = mapping.performanceTime + (frame / ctx.sampleRate - mapping.contextTime) * 1000;
    return Math.round(ms * 1000 + taps.clockOffset);
  };
  const uploads = poster(32);
  const taps = {
    clockOffset: 0,
    record(side, track) {
      const source = ctx.createMediaStreamSource(new MediaStream([track]));
      const tap = new AudioWorkletNode(ctx, 'tap', { numberOfInputs: 1, numberOfOutputs: 1,
        channelCount: 1, channelCountMode: 'explicit', channelInterpretation: 'speakers' });
      source.connect(tap);
      tap.connect(silent);
      tap.port.onmessage = (e) => {
        const { frame, samples } = e.data;
        const pcm = new Int16Array(samples.length);
        for (let i = 0; i < samples.length; i++) {
          pcm[i] = Math.max(-32768, Math.min(32767, Math.round(samples[i] * 32767)));
        }
        if (!uploads.post(`/audio?side=${side}&frame=${frame}&us=${hostUs(frame)}`, pcm)) {
          warn('audio', 'too many uploads under way: an audio chunk not recorded');
        }
      };
      event('audio_track', { side, settings: track.getSettings ? track.getSettings() : null });
    },
  };
  return taps;
}

function pick(report, fields) {
  const out = {};
  for (const f of fields) if (report[f] !== undefined) out[f] = report[f];
  return out;
}

function statsLoop(sender, receiver, clock) {
  setInterval(async () => {
    try {
      const out = { t_us: Math.round(performance.now() * 1000 + clock.offset) };
      const senderStats = await sender.getStats();
      // The nominated pair's own addresses, so a run shows which addresses carried it.
      const where = (id) => {
        const c = id && senderStats.get(id);
        return c ? { address: c.address, port: c.port, type: c.candidateType } : null;
      };
      senderStats.forEach((r) => {
        if (r.type === 'outbound-rtp' && r.kind === 'audio') {
          out.outbound_audio = pick(r, ['bytesSent', 'packetsSent', 'targetBitrate']);
        } else if (r.type === 'outbound-rtp') {
          out.outbound = pick(r, ['targetBitrate', 'bytesSent', 'framesEncoded', 'framesSent',
            'framesPerSecond', 'frameWidth', 'frameHeight', 'qualityLimitationReason',
            'qpSum', 'keyFramesEncoded', 'nackCount', 'pliCount', 'retransmittedBytesSent',
            'encoderImplementation', 'scalabilityMode']);
        } else if (r.type === 'candidate-pair' && r.nominated) {
          out.pair = pick(r, ['availableOutgoingBitrate', 'currentRoundTripTime', 'bytesSent',
            'bytesReceived']);
          out.pair.local = where(r.localCandidateId);
          out.pair.remote = where(r.remoteCandidateId);
        }
      });
      (await receiver.getStats()).forEach((r) => {
        if (r.type === 'inbound-rtp' && r.kind === 'audio') {
          // Chromium's own account of its audio (NetEq's): read beside the marks, never as them.
          out.inbound_audio = pick(r, ['bytesReceived', 'packetsReceived', 'packetsLost',
            'totalSamplesReceived', 'concealedSamples', 'silentConcealedSamples',
            'concealmentEvents', 'insertedSamplesForDeceleration', 'removedSamplesForAcceleration',
            'jitterBufferDelay', 'jitterBufferTargetDelay', 'jitterBufferEmittedCount',
            'totalSamplesDuration']);
        } else if (r.type === 'inbound-rtp') {
          out.inbound = pick(r, ['bytesReceived', 'packetsLost', 'framesReceived',
            'framesDecoded', 'framesDropped', 'framesPerSecond', 'frameWidth', 'frameHeight',
            'jitterBufferDelay', 'jitterBufferEmittedCount', 'freezeCount', 'totalFreezesDuration',
            'keyFramesDecoded', 'decoderImplementation']);
        }
      });
      fetch('/stats', { method: 'POST', body: JSON.stringify(out) }).catch(() => {});
    } catch (e) {
      fail('getStats', e);
    }
  }, 1000);
}

async function main() {
  const config = await (await fetch('/config', { cache: 'no-store' })).json();
  const clock = await syncClock(20);
  event('clock', { offset_us: clock.offset, rtt_ms: clock.rtt });

  // The microphone's own processing is off: the marks are tones it would treat as noise
  // or echo (it runs before the sender's recording, so it is not in the measured delay).
  const camera = await navigator.mediaDevices.getUserMedia({
    video: { width: config.width, height: config.height, frameRate: config.fps },
    audio: config.audio
      ? { echoCancellation: false, noiseSuppression: false, autoGainControl: false }
      : false,
  });
  let taps = null;
  if (config.audio) {
    taps = await audioTaps();
    taps.clockOffset = clock.offset;
    taps.record('sent', camera.getAudioTracks()[0]);
  }
  const track = camera.getVideoTracks()[0];
  event('camera', { settings: track.getSettings() });
  // From the start, so that every picture the call shows has its capture recorded.
  captureLoop(track.clone(), clock);

  const sender = new RTCPeerConnection({ iceServers: [] });
  const receiver = new RTCPeerConnection({ iceServers: [] });
  const senderCandidates = gather(sender);
  const receiverCandidates = gather(receiver);
  for (const [name, pc] of [['sender', sender], ['receiver', receiver]]) {
    pc.onconnectionstatechange = () => event('state', { peer: name, state: pc.connectionState });
  }

  // One codec only, keeping Chrome's helper codecs (retransmission, redundancy, FEC). A
  // codec this Chromium does not offer is an error naming the ones it does.
  const wanted = config.codec || 'video/VP8';
  const offered = RTCRtpSender.getCapabilities('video').codecs;
  if (!offered.some((c) => c.mimeType.toLowerCase() === wanted.toLowerCase())) {
    const names = [...new Set(offered.map((c) => c.mimeType))].join(', ');
    fail('setup', `this Chromium does not offer ${wanted} for WebRTC; it offers ${names}`);
    return;
  }
  const encoding = {};
  if (config.max_bitrate_bps) encoding.maxBitrate = config.max_bitrate_bps;
  if (config.scalability_mode) encoding.scalabilityMode = config.scalability_mode;
  // With audio, both tracks go out as one stream, as a call page sends them: Chromium then
  // plays them in sync (its lip sync, on by default for the tracks of one stream).
  const streams = config.audio ? [camera] : [];
  const transceiver = sender.addTransceiver(track,
    { direction: 'sendonly', sendEncodings: [encoding], streams });
  const helpers = ['video/rtx', 'video/red', 'video/ulpfec', 'video/flexfec-03'];
  const codecs = offered.filter((c) => c.mimeType.toLowerCase() === wanted.toLowerCase()
    || helpers.includes(c.mimeType));
  transceiver.setCodecPreferences(codecs);

  if (config.audio) {
    sender.addTransceiver(camera.getAudioTracks()[0], { direction: 'sendonly', streams });
  }

  receiver.ontrack = (e) => {
    if (e.track.kind === 'audio') {
      // Played by an element as a call page would (Chromium feeds a remote track to Web
      // Audio only while it is played), and recorded as it is played.
      const element = document.getElementById('remote-audio');
      element.srcObject = new MediaStream([e.track]);
      element.play().catch((err) => warn('audio', err));
      if (taps) taps.record('received', e.track);
      return;
    }
    const video = document.getElementById('remote');
    video.srcObject = new MediaStream([e.track]);
    displayLoop(video, clock);
  };

  // Offer and answer without candidates: the candidates go through the server.
  const offer = await sender.createOffer();
  await sender.setLocalDescription(offer);
  await receiver.setRemoteDescription(offer);
  const answer = await receiver.createAnswer();
  await receiver.setLocalDescription(answer);
  await sender.setRemoteDescription(answer);

  if (config.degradation_preference) {
    const params = transceiver.sender.getParameters();
    params.degradationPreference = config.degradation_preference;
    await transceiver.sender.setParameters(params);
  }
  const params = transceiver.sender.getParameters();
  event('sender_parameters', { parameters: params });
  const mode = params.encodings[0] && params.encodings[0].scalabilityMode;
  if (config.scalability_mode && mode !== config.scalability_mode) {
    fail('setup', `the sender took scalabilityMode ${mode}, not ${config.scalability_mode}`);
    return;
  }

  await Promise.all([senderCandidates.done, receiverCandidates.done]);
  const reply = await fetch('/ice', {
    method: 'POST',
    body: JSON.stringify({ sender: senderCandidates.found, receiver: receiverCandidates.found }),
  });
  if (!reply.ok) {
    fail('ice', await reply.text());
    return;
  }
  const route = await reply.json();
  await receiver.addIceCandidate(route.for_receiver);
  await sender.addIceCandidate(route.for_sender);

  statsLoop(sender, receiver, clock);
}

main().catch((e) => fail('setup', e));
