import { resamplePcm16, Resampler } from './resample';

function sine(hz: number, sampleRate: number, count: number, amplitude = 12000): Int16Array {
  return Int16Array.from({ length: count }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / sampleRate)));
}

function zeroCrossings(samples: Int16Array): number {
  let crossings = 0;
  for (let i = 1; i < samples.length; i++) if ((samples[i - 1] < 0) !== (samples[i] < 0)) crossings++;
  return crossings;
}

function chunked(samples: Int16Array, sizes: number[]): Int16Array[] {
  const chunks: Int16Array[] = [];
  for (let at = 0, k = 0; at < samples.length; k++) {
    const size = sizes[k % sizes.length];
    chunks.push(samples.subarray(at, at + size));
    at += size;
  }
  return chunks;
}

function concat(parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

const RATES = [8000, 16000, 22050, 24000];
const PAIRS = RATES.flatMap((from) => RATES.filter((to) => to !== from).map((to) => [from, to] as const));

describe('Resampler', () => {
  it.each(PAIRS)('turns every 20 ms chunk at %i Hz into exactly 20 ms at %i Hz', (from, to) => {
    const resampler = new Resampler(from, to);
    for (let chunk = 0; chunk < 10; chunk++) {
      expect(resampler.process(new Int16Array(from / 50)).length).toBe(to / 50);
    }
  });

  it.each(PAIRS)('keeps a 440 Hz tone at 440 Hz from %i Hz to %i Hz', (from, to) => {
    // One second of tone: 880 zero crossings whatever the rate.
    const out = resamplePcm16(sine(440, from, from), from, to);
    expect(out.length).toBe(to);
    expect(Math.abs(zeroCrossings(out) - 880)).toBeLessThanOrEqual(2);
  });

  it.each(PAIRS)('gives the same samples chunked as in one go (%i Hz → %i Hz)', (from, to) => {
    const input = sine(440, from, from);
    const oneShot = resamplePcm16(input, from, to);
    const resampler = new Resampler(from, to);
    // 20 ms chunks, then irregular ones, including an empty chunk.
    const regular = concat(chunked(input, [from / 50]).map((c) => resampler.process(c)));
    expect(regular).toEqual(oneShot);
    resampler.reset();
    const irregular = concat(chunked(input, [1, 0, 157, 33, 480, 2]).map((c) => resampler.process(c)));
    expect(irregular).toEqual(oneShot);
  });

  it('keeps amplitude: a full-scale tone stays within a few percent of full scale', () => {
    const out = resamplePcm16(sine(300, 8000, 8000, 30000), 8000, 16000);
    const peak = out.reduce((m, s) => Math.max(m, Math.abs(s)), 0);
    expect(peak).toBeGreaterThan(29000);
    expect(peak).toBeLessThanOrEqual(30000);
  });

  it('interpolates linearly between input samples when upsampling', () => {
    const out = new Resampler(8000, 16000).process(new Int16Array([0, 100, 200, 300]));
    // One-input-sample delay: the first sample is held, then midpoints appear between neighbours.
    expect([...out]).toEqual([0, 0, 0, 50, 100, 150, 200, 250]);
  });

  it('returns a copy when the rates are equal', () => {
    const input = new Int16Array([1, 2, 3]);
    const out = resamplePcm16(input, 8000, 8000);
    expect(out).toEqual(input);
    expect(out).not.toBe(input);
  });

  it('refuses non-integer or non-positive rates', () => {
    expect(() => new Resampler(0, 8000)).toThrow(/fromRate/);
    expect(() => new Resampler(8000, 44100.5)).toThrow(/toRate/);
  });
});
