import { powerAt, rms } from './levels';
import { dtmfTone, DTMF_GAP_MS, DTMF_TONE_MS, Ringback } from './tones';

const power = (samples: Int16Array, hz: number, rate: number) => powerAt(samples, hz, rate);

describe('Ringback', () => {
  it('plays 440 + 480 Hz for 2 s, then is silent for 4 s, and starts again', () => {
    const ring = new Ringback(8000);
    const frames = Array.from({ length: 350 }, () => ring.next());
    expect(frames.every((f) => f.length === 160)).toBe(true);
    const on = frames.slice(0, 100);
    const off = frames.slice(100, 300);
    expect(on.every((f) => rms(f) > 1000)).toBe(true);
    expect(off.every((f) => rms(f) === 0)).toBe(true);
    expect(rms(frames[300])).toBeGreaterThan(1000);
    const second = Int16Array.from(on.slice(10, 60).flatMap((f) => [...f]));
    expect(power(second, 440, 8000)).toBeGreaterThan(50 * power(second, 1000, 8000));
    expect(power(second, 480, 8000)).toBeGreaterThan(50 * power(second, 1000, 8000));
  });

  it('never clips', () => {
    const ring = new Ringback(16000);
    const peak = Math.max(...Array.from({ length: 100 }, () => Math.max(...ring.next().map(Math.abs))));
    expect(peak).toBeLessThan(32767);
  });
});

describe('dtmfTone', () => {
  it('is the key’s row and column frequencies for 120 ms, then 60 ms of silence', () => {
    const five = dtmfTone('5', 8000) as Int16Array;
    expect(five.length).toBe(((DTMF_TONE_MS + DTMF_GAP_MS) * 8000) / 1000);
    const tone = five.subarray(0, (DTMF_TONE_MS * 8000) / 1000);
    expect(rms(five.subarray(tone.length))).toBe(0);
    const other = power(tone, 1000, 8000);
    expect(power(tone, 770, 8000)).toBeGreaterThan(50 * other);
    expect(power(tone, 1336, 8000)).toBeGreaterThan(50 * other);
    expect(power(tone, 697, 8000)).toBeLessThan(power(tone, 770, 8000) / 10);
  });

  it('knows every key of the 4×4 pad and nothing else', () => {
    for (const key of '0123456789*#ABCDabcd') expect(dtmfTone(key, 16000)).toBeDefined();
    expect(dtmfTone('x', 16000)).toBeUndefined();
  });
});
