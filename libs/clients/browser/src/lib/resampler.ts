/** Zero crossings of the windowed-sinc kernel on each side: enough to keep speech free of audible aliasing. */
const ZERO_CROSSINGS = 8;

/**
 * A streaming band-limited resampler (windowed sinc, low-passed below the lower rate's Nyquist frequency), for
 * the microphone's rate (48 or 44.1 kHz) down to the call's and the call's up to the speakers'. Chunks may be any
 * length; state carries across them. Kernels are cached per fractional phase, which repeat for these ratios.
 */
export class Resampler {
  private readonly step: number;
  private readonly cutoff: number;
  private readonly reach: number;
  private readonly kernels = new Map<number, Float32Array>();
  private buffer: Float32Array;
  /** Position of the next output sample, in input samples from buffer[0]. */
  private time: number;

  constructor(
    readonly inputRate: number,
    readonly outputRate: number,
  ) {
    this.step = inputRate / outputRate;
    this.cutoff = 0.5 * Math.min(1, outputRate / inputRate);
    this.reach = Math.ceil(ZERO_CROSSINGS / (2 * this.cutoff));
    this.buffer = new Float32Array(this.reach);
    this.time = this.reach;
  }

  /** Forgets the samples held back for the kernel (after a `clear`, they belong to dropped audio). */
  reset(): void {
    this.buffer = new Float32Array(this.reach);
    this.time = this.reach;
  }

  process(input: Float32Array): Float32Array {
    if (this.inputRate === this.outputRate) return input.slice();
    const buffer = new Float32Array(this.buffer.length + input.length);
    buffer.set(this.buffer);
    buffer.set(input, this.buffer.length);
    const count = Math.max(0, Math.floor((buffer.length - 1 - this.reach - this.time) / this.step) + 1);
    const output = new Float32Array(count);
    for (let n = 0; n < count; n++) {
      const t = this.time + n * this.step;
      const first = Math.floor(t) - this.reach + 1;
      const kernel = this.kernel(t - Math.floor(t));
      let sum = 0;
      for (let k = 0; k < kernel.length; k++) sum += buffer[first + k] * kernel[k];
      output[n] = sum;
    }
    const next = this.time + count * this.step;
    const drop = Math.max(0, Math.floor(next) - this.reach);
    this.buffer = buffer.slice(drop);
    this.time = next - drop;
    return output;
  }

  /** Weights of input samples floor(t)-reach+1 … floor(t)+reach for an output at fractional offset `phase`. */
  private kernel(phase: number): Float32Array {
    const key = Math.round(phase * 1e6);
    let kernel = this.kernels.get(key);
    if (kernel) return kernel;
    kernel = new Float32Array(2 * this.reach);
    let total = 0;
    for (let k = 0; k < kernel.length; k++) {
      const distance = phase - (k - this.reach + 1);
      const x = 2 * this.cutoff * distance;
      const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
      const window = 0.5 + 0.5 * Math.cos((Math.PI * distance) / this.reach);
      kernel[k] = Math.abs(distance) >= this.reach ? 0 : sinc * window;
      total += kernel[k];
    }
    // Unity gain at DC whatever the phase, so a steady level stays steady.
    for (let k = 0; k < kernel.length; k++) kernel[k] /= total;
    this.kernels.set(key, kernel);
    return kernel;
  }
}
