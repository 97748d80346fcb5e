import { Resampler } from './resampler';

/** Turns the microphone's chunks (any length, the device's rate) into whole frames at the call's rate. */
export class FrameEncoder {
  private readonly resampler: Resampler;
  private readonly frame: Float32Array;
  private filled = 0;

  constructor(inputRate: number, callRate: number, frameMs: number) {
    this.resampler = new Resampler(inputRate, callRate);
    this.frame = new Float32Array(Math.round((callRate * frameMs) / 1000));
  }

  get frameSamples(): number {
    return this.frame.length;
  }

  push(chunk: Float32Array): Float32Array[] {
    const samples = this.resampler.process(chunk);
    const frames: Float32Array[] = [];
    let offset = 0;
    while (offset < samples.length) {
      const n = Math.min(this.frame.length - this.filled, samples.length - offset);
      this.frame.set(samples.subarray(offset, offset + n), this.filled);
      this.filled += n;
      offset += n;
      if (this.filled === this.frame.length) {
        frames.push(this.frame.slice());
        this.filled = 0;
      }
    }
    return frames;
  }
}
