/**
 * Streaming linear-interpolation resampler for mono PCM16.
 *
 * Carries its position and the previous chunk's last sample across calls, so resampling 20 ms chunks one by one
 * gives exactly the same samples as resampling the whole stream at once, and each chunk of `n` samples yields
 * `n * toRate / fromRate` samples (rounded so that the running total never drifts). The price of needing no
 * lookahead is a one-input-sample delay (0.125 ms at 8 kHz). Positions are exact integers (no float drift over
 * long calls). No anti-aliasing filter: good enough for speech between telephony rates, not for music.
 */
export class Resampler {
  readonly fromRate: number;
  readonly toRate: number;
  /** Input advance per output sample, in units of 1/den input sample. */
  private readonly step: number;
  private readonly den: number;
  /** Position of the next output sample, in 1/den input samples, where 0 is the previous chunk's last sample. */
  private pos = 0;
  private prev: number | undefined;

  constructor(fromRate: number, toRate: number) {
    for (const [name, rate] of [
      ['fromRate', fromRate],
      ['toRate', toRate],
    ] as const) {
      if (!Number.isInteger(rate) || rate <= 0) throw new RangeError(`${name} must be a positive integer, got ${rate}`);
    }
    this.fromRate = fromRate;
    this.toRate = toRate;
    const g = gcd(fromRate, toRate);
    this.step = fromRate / g;
    this.den = toRate / g;
  }

  /** Resamples the next chunk of the stream. */
  process(input: Int16Array): Int16Array {
    if (this.fromRate === this.toRate) return input.slice();
    const n = input.length;
    if (n === 0) return new Int16Array(0);
    const { step, den } = this;
    // The first chunk has no predecessor: hold its first sample.
    const prev = this.prev ?? input[0];
    const limit = n * den;
    const count = this.pos < limit ? Math.ceil((limit - this.pos) / step) : 0;
    const out = new Int16Array(count);
    let p = this.pos;
    for (let k = 0; k < count; k++, p += step) {
      const i = Math.floor(p / den);
      const r = p - i * den;
      // Index i is input[i - 1] (prev when i = 0); interpolate towards input[i].
      const a = i === 0 ? prev : input[i - 1];
      out[k] = r === 0 ? a : Math.round(a + ((input[i] - a) * r) / den);
    }
    this.pos = p - limit;
    this.prev = input[n - 1];
    return out;
  }

  /** Forgets the stream so far (for a new, unrelated stream). */
  reset(): void {
    this.pos = 0;
    this.prev = undefined;
  }
}

/** Resamples a whole signal at once (same output as feeding it to a fresh {@link Resampler} in any chunks). */
export function resamplePcm16(samples: Int16Array, fromRate: number, toRate: number): Int16Array {
  return new Resampler(fromRate, toRate).process(samples);
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}
