import { CallRecorder } from './call-recorder';
import { parseWav } from './wav';

const filled = (length: number, value: number) => new Int16Array(length).fill(value);

describe('CallRecorder', () => {
  it('places each track at its millisecond offset and fills the gaps with silence', () => {
    const recorder = new CallRecorder(8000);
    recorder.write('caller', filled(160, 1000), 0); // 0–20 ms
    recorder.write('agent', filled(160, -2000), 40); // 40–60 ms

    const { sampleRate, channels, samples } = parseWav(recorder.finish());
    expect([sampleRate, channels, samples.length]).toEqual([8000, 1, 480]);
    expect(samples.subarray(0, 160).every((s) => s === 1000)).toBe(true);
    expect(samples.subarray(160, 320).every((s) => s === 0)).toBe(true);
    expect(samples.subarray(320, 480).every((s) => s === -2000)).toBe(true);
  });

  it('sums overlapping tracks and clips the sum to int16', () => {
    const recorder = new CallRecorder(8000);
    recorder.write('caller', new Int16Array([1000, 30000, -30000, 5]), 0);
    recorder.write('agent', new Int16Array([-400, 10000, -10000, 0]), 0);
    expect([...recorder.mix()]).toEqual([600, 32767, -32768, 5]);
  });

  it('reports the duration as the end of the latest audio on either track', () => {
    const recorder = new CallRecorder(16000);
    expect(recorder.durationMs).toBe(0);
    recorder.write('agent', filled(320, 1), 1000);
    expect(recorder.durationMs).toBe(1020);
    recorder.write('caller', filled(320, 1), 0);
    expect(recorder.durationMs).toBe(1020);
  });

  it('overwrites a track re-sent over itself instead of doubling it', () => {
    const recorder = new CallRecorder(8000);
    recorder.write('caller', filled(160, 100), 0);
    recorder.write('caller', filled(80, 7), 10);
    const mixed = recorder.mix();
    expect([mixed[79], mixed[80], mixed[159]]).toEqual([100, 7, 7]);
  });

  it('handles audio spanning its internal 10-second blocks and long silent stretches', () => {
    const recorder = new CallRecorder(8000);
    recorder.write('caller', filled(16000, 3), 9000); // 9 s – 11 s, across the first block boundary
    recorder.write('agent', filled(8, 4), 60_000); // a minute in, after 49 s of silence
    const mixed = recorder.mix();
    expect(mixed.length).toBe(480_008);
    expect([mixed[71_999], mixed[72_000], mixed[87_999], mixed[88_000]]).toEqual([0, 3, 3, 0]);
    expect(mixed.subarray(480_000).every((s) => s === 4)).toBe(true);
  });

  it('drops audio past maxDurationMs and says so', () => {
    const recorder = new CallRecorder(8000, { maxDurationMs: 1000 });
    recorder.write('caller', filled(160, 1), 990);
    expect(recorder.truncated).toBe(true);
    expect(recorder.durationMs).toBe(1000);
    recorder.write('agent', filled(160, 1), 5000);
    expect(recorder.durationMs).toBe(1000);
  });

  it('refuses negative offsets and unknown tracks', () => {
    const recorder = new CallRecorder(8000);
    expect(() => recorder.write('caller', filled(1, 1), -1)).toThrow(RangeError);
    expect(() => recorder.write('bystander' as never, filled(1, 1), 0)).toThrow(/Unknown recorder track/);
  });

  it('finishes an empty recording as a valid, empty WAV', () => {
    expect(parseWav(new CallRecorder(8000).finish()).samples.length).toBe(0);
  });
});
