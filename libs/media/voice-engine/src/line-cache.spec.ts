import { FakeTextToSpeech, SpeechChunk, SpeechError } from '@parley/speech';
import { realClock } from './clock';
import { LineCache } from './line-cache';
import { FallbackTextToSpeech } from './tts-fallback';

const line = (text: string, voiceId = 'ada') => ({ text, language: 'en-US', voiceId });
const read = async (chunks: AsyncIterable<SpeechChunk>) => {
  const out: Int16Array[] = [];
  for await (const chunk of chunks) out.push(chunk.pcm);
  return out;
};
const signal = () => new AbortController().signal;

describe('LineCache', () => {
  it('synthesizes a line once per voice, language and text, and replays the same audio after', async () => {
    const tts = new FakeTextToSpeech();
    const cache = new LineCache();
    await cache.prepare(tts, line('Are you still there?'));
    const first = await read(cache.synthesize(tts, { ...line('Are you still there?'), signal: signal() }));
    const again = await read(cache.synthesize(tts, { ...line('Are you still there?'), signal: signal() }));
    expect(tts.syntheses).toHaveLength(1);
    expect(first.length).toBeGreaterThan(1);
    expect(again).toEqual(first);
    // Another voice, or another text, is another line.
    await read(cache.synthesize(tts, { ...line('Are you still there?', 'bob'), signal: signal() }));
    await read(cache.synthesize(tts, { ...line('Goodbye.'), signal: signal() }));
    expect(tts.syntheses.map((s) => [s.request.text, s.request.voiceId])).toEqual([
      ['Are you still there?', 'ada'],
      ['Are you still there?', 'bob'],
      ['Goodbye.', 'ada'],
    ]);
  });

  it('lets a line still being synthesized be read as it comes, by one synthesis', async () => {
    const tts = new FakeTextToSpeech({ chunkIntervalMs: 5 });
    const cache = new LineCache();
    const preparing = cache.prepare(tts, line('Hello, this is Ada.'));
    const heard = await read(cache.synthesize(tts, { ...line('Hello, this is Ada.'), signal: signal() }));
    await preparing;
    expect(tts.syntheses).toHaveLength(1);
    expect(heard.reduce((n, pcm) => n + pcm.length, 0)).toBe(Math.round((50 * 'Hello, this is Ada.'.length * 16000) / 1000));
  });

  it('holds at most its bound in bytes, dropping the least recently used line first', async () => {
    const tts = new FakeTextToSpeech();
    const bytes = (text: string) => 2 * Math.round((50 * text.length * 16000) / 1000);
    const [a, b, c] = ['First line here.', 'Second line now.', 'Third line also.'];
    const cache = new LineCache(bytes(a) + bytes(b) + 10);
    await cache.prepare(tts, line(a));
    await cache.prepare(tts, line(b));
    expect(cache.bytes).toBe(bytes(a) + bytes(b));
    await read(cache.synthesize(tts, { ...line(a), signal: signal() })); // `a` used: `b` is now the oldest
    await cache.prepare(tts, line(c));
    expect(cache.bytes).toBeLessThanOrEqual(bytes(a) + bytes(b) + 10);
    const before = tts.syntheses.length;
    await read(cache.synthesize(tts, { ...line(a), signal: signal() }));
    await read(cache.synthesize(tts, { ...line(c), signal: signal() }));
    expect(tts.syntheses.length).toBe(before);
    await read(cache.synthesize(tts, { ...line(b), signal: signal() }));
    expect(tts.syntheses.length).toBe(before + 1);
  });

  it('keeps no line whose synthesis failed, and its readers hear the failure', async () => {
    const tts = new FakeTextToSpeech().failNext(new SpeechError('down', { code: 'connection', provider: 'fake-tts' }));
    const cache = new LineCache();
    await expect(read(cache.synthesize(tts, { ...line('Goodbye.'), signal: signal() }))).rejects.toThrow('down');
    expect(cache.bytes).toBe(0);
    expect((await read(cache.synthesize(tts, { ...line('Goodbye.'), signal: signal() }))).length).toBeGreaterThan(0);
    expect(tts.syntheses).toHaveLength(2);
  });

  it('stops a reader at once when its turn is interrupted, while the line is still completed for the next call', async () => {
    const tts = new FakeTextToSpeech({ chunkIntervalMs: 20 });
    const cache = new LineCache();
    const controller = new AbortController();
    const chunks: SpeechChunk[] = [];
    for await (const chunk of cache.synthesize(tts, { ...line('Press 1 for sales, 2 for support.'), signal: controller.signal })) {
      chunks.push(chunk);
      if (chunks.length === 2) controller.abort();
    }
    expect(chunks).toHaveLength(2);
    await cache.prepare(tts, line('Press 1 for sales, 2 for support.'));
    expect(tts.syntheses.map((s) => s.outcome)).toEqual(['completed']);
  });

  it('plays a line a fallback voice spoke but does not keep it: the next call asks the first choice again', async () => {
    const first = new FakeTextToSpeech({ name: 'first' }).failNext(new SpeechError('down', { code: 'connection', provider: 'first' }));
    const spare = new FakeTextToSpeech({ name: 'spare' });
    const voice = new FallbackTextToSpeech([first, spare], { clock: realClock, voices: {}, firstAudioTimeoutMs: 1000 });
    const cache = new LineCache();
    expect((await read(cache.synthesize(voice, { ...line('Goodbye.'), signal: signal() }))).length).toBeGreaterThan(0);
    expect(cache.bytes).toBe(0);
    await read(cache.synthesize(voice, { ...line('Goodbye.'), signal: signal() }));
    expect(first.syntheses.map((s) => s.outcome)).toEqual(['failed', 'completed']);
    expect(spare.syntheses).toHaveLength(1);
    expect(cache.bytes).toBeGreaterThan(0);
  });
});
