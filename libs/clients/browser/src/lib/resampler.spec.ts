import { rms } from './pcm';
import { Resampler } from './resampler';

const sine = (hz: number, rate: number, samples: number, level = 0.5) => Float32Array.from({ length: samples }, (_, i) => level * Math.sin((2 * Math.PI * hz * i) / rate));

/** Resamples a signal in uneven chunks, as a worklet hands them over. */
function resample(resampler: Resampler, signal: Float32Array, chunk = 333): Float32Array {
  const parts: Float32Array[] = [];
  for (let i = 0; i < signal.length; i += chunk) parts.push(resampler.process(signal.subarray(i, i + chunk)));
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) out.set(p, (offset += p.length) - p.length);
  return out;
}

describe('the resampler', () => {
  it.each([
    [48_000, 16_000],
    [44_100, 16_000],
    [16_000, 48_000],
    [16_000, 44_100],
  ])('carries a 1 kHz tone from %i Hz to %i Hz at its level, in the right number of samples', (from, to) => {
    const out = resample(new Resampler(from, to), sine(1_000, from, from));

    expect(Math.abs(out.length - to)).toBeLessThanOrEqual(Math.ceil((16 * to) / Math.min(from, to)));
    const steady = out.subarray(Math.floor(out.length / 4), Math.floor((out.length * 3) / 4));
    expect(rms(steady)).toBeCloseTo(0.5 / Math.SQRT2, 2);
    // Still 1 kHz: two zero crossings per millisecond.
    let crossings = 0;
    for (let i = 1; i < steady.length; i++) if (steady[i - 1] < 0 !== steady[i] < 0) crossings++;
    expect(crossings / ((steady.length / to) * 1000)).toBeCloseTo(2, 1);
  });

  it('removes a 12 kHz tone going to 16 kHz (above its 8 kHz limit) instead of folding it into the speech band', () => {
    const out = resample(new Resampler(48_000, 16_000), sine(12_000, 48_000, 48_000));

    expect(rms(out.subarray(1000))).toBeLessThan(0.01);
  });
});
