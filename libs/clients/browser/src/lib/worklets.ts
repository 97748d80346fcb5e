/** How much agent audio the player holds before it starts (and restarts after running dry): absorbs network jitter. */
export const JITTER_BUFFER_MS = 60;

/**
 * The two AudioWorklet processors, as source text: they are loaded from a Blob URL so the one-file script needs
 * no second download (AudioWorklet modules cannot come from the page's own script). Plain ES2017, no imports.
 *
 * parley-capture posts the microphone to the main thread in batches of 8 render quanta (about 21 ms at 48 kHz).
 * parley-playback plays queued chunks once JITTER_BUFFER_MS is buffered (or its oldest chunk waited that long, so a
 * short last word still plays), and reports the samples it consumed every 8 quanta, at once when it runs dry and
 * after a clear.
 */
export const WORKLET_SOURCE = `
const BATCH = 128 * 8;
class ParleyCapture extends AudioWorkletProcessor {
  constructor() { super(); this.batch = new Float32Array(BATCH); this.filled = 0; }
  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (channel) {
      let offset = 0;
      while (offset < channel.length) {
        const n = Math.min(BATCH - this.filled, channel.length - offset);
        this.batch.set(channel.subarray(offset, offset + n), this.filled);
        this.filled += n; offset += n;
        if (this.filled === BATCH) { this.port.postMessage(this.batch.slice()); this.filled = 0; }
      }
    }
    return true;
  }
}
class ParleyPlayback extends AudioWorkletProcessor {
  constructor() {
    super();
    this.chunks = []; this.offset = 0; this.buffered = 0; this.consumed = 0; this.reported = 0;
    this.playing = false; this.waitingSince = -1; this.quanta = 0;
    this.startAt = Math.round(sampleRate * ${JITTER_BUFFER_MS} / 1000);
    this.port.onmessage = (event) => {
      const message = event.data;
      if (message.type === 'play') {
        this.chunks.push(message.samples); this.buffered += message.samples.length;
        if (this.waitingSince < 0) this.waitingSince = currentTime;
      } else if (message.type === 'clear') {
        this.consumed += this.buffered; this.chunks = []; this.offset = 0; this.buffered = 0;
        this.playing = false; this.waitingSince = -1; this.report();
      }
    };
  }
  report() { this.reported = this.consumed; this.port.postMessage(this.consumed); }
  process(_inputs, outputs) {
    const out = outputs[0][0];
    if (!this.playing && this.buffered > 0 && (this.buffered >= this.startAt || currentTime - this.waitingSince >= ${JITTER_BUFFER_MS / 1000})) this.playing = true;
    if (this.playing) {
      let i = 0;
      while (i < out.length && this.chunks.length) {
        const chunk = this.chunks[0];
        const n = Math.min(out.length - i, chunk.length - this.offset);
        out.set(chunk.subarray(this.offset, this.offset + n), i);
        i += n; this.offset += n; this.buffered -= n; this.consumed += n;
        if (this.offset === chunk.length) { this.chunks.shift(); this.offset = 0; }
      }
      if (this.buffered === 0) { this.playing = false; this.waitingSince = -1; this.report(); }
    }
    if (++this.quanta % 8 === 0 && this.consumed !== this.reported) this.report();
    return true;
  }
}
registerProcessor('parley-capture', ParleyCapture);
registerProcessor('parley-playback', ParleyPlayback);
`;
