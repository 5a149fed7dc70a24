// An AudioWorklet processor that hands the page its input's first channel in blocks of
// CHUNK samples, each with the context's frame number of its first sample, so the page can
// upload the audio a track carried with its exact position on the context's clock. Every
// render quantum is taken (a gap in the frame numbers would be the context's own).
'use strict';

const CHUNK = 4800; // 100 ms at 48 kHz

class Tap extends AudioWorkletProcessor {
  constructor() {
    super();
    this.chunk = new Float32Array(CHUNK);
    this.filled = 0;
    this.firstFrame = 0;
  }

  process(inputs) {
    const input = inputs[0];
    const block = input && input[0];
    const length = block ? block.length : 128;
    for (let i = 0; i < length; i++) {
      if (this.filled === 0) this.firstFrame = currentFrame + i;
      this.chunk[this.filled] = block ? block[i] : 0;
      this.filled += 1;
      if (this.filled === CHUNK) {
        this.port.postMessage({ frame: this.firstFrame, samples: this.chunk }, [this.chunk.buffer]);
        this.chunk = new Float32Array(CHUNK);
        this.filled = 0;
      }
    }
    return true;
  }
}

registerProcessor('tap', Tap);
