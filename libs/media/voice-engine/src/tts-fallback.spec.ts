import { FakeTextToSpeech, SpeechChunk, SpeechError } from '@parley/speech';
import { realClock } from './clock';
import { FallbackTextToSpeech } from './tts-fallback';

const collect = async (chunks: AsyncIterable<SpeechChunk>) => {
  let samples = 0;
  for await (const chunk of chunks) samples += chunk.pcm.length;
  return samples;
};
const request = (signal = new AbortController().signal) => ({ text: 'Hello there.', language: 'en-US', voiceId: 'ada', signal });

describe('FallbackTextToSpeech', () => {
  it('hands the sentence to the next provider, with that provider’s voice, when the first fails before any audio', async () => {
    const first = new FakeTextToSpeech({ name: 'first' }).failNext(new SpeechError('boom', { code: 'http', provider: 'first', status: 500 }));
    const spare = new FakeTextToSpeech({ name: 'spare' });
    const tts = new FallbackTextToSpeech([first, spare], { clock: realClock, voices: { spare: 'spare-voice' }, firstAudioTimeoutMs: 1000 });
    expect(await collect(tts.synthesize(request()))).toBeGreaterThan(0);
    expect(first.syntheses.map((s) => [s.request.voiceId, s.outcome])).toEqual([['ada', 'failed']]);
    expect(spare.syntheses.map((s) => [s.request.voiceId, s.outcome])).toEqual([['spare-voice', 'completed']]);
  });

  it('gives up on a provider still silent after the first-audio timeout', async () => {
    const silent = new FakeTextToSpeech({ name: 'silent', firstChunkDelayMs: 5000 });
    const spare = new FakeTextToSpeech({ name: 'spare' });
    const tts = new FallbackTextToSpeech([silent, spare], { clock: realClock, voices: {}, firstAudioTimeoutMs: 50 });
    const started = Date.now();
    expect(await collect(tts.synthesize(request()))).toBeGreaterThan(0);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(silent.syntheses[0].outcome).toBe('aborted');
    expect(spare.syntheses).toHaveLength(1);
  });

  it('throws a failure after audio has flowed: no other voice finishes a sentence begun', async () => {
    const first = new FakeTextToSpeech({ name: 'first' }).failNext(new SpeechError('cut', { code: 'connection', provider: 'first' }), { afterChunks: 2 });
    const spare = new FakeTextToSpeech({ name: 'spare' });
    const tts = new FallbackTextToSpeech([first, spare], { clock: realClock, voices: {}, firstAudioTimeoutMs: 1000 });
    await expect(collect(tts.synthesize(request()))).rejects.toThrow('cut');
    expect(spare.syntheses).toHaveLength(0);
  });

  it('ends without audio when every provider fails, and stops at once when the request is aborted', async () => {
    const broken = (name: string) => new FakeTextToSpeech({ name }).failNext(new SpeechError('down', { code: 'connection', provider: name }));
    const none = new FallbackTextToSpeech([broken('a'), broken('b')], { clock: realClock, voices: {}, firstAudioTimeoutMs: 1000 });
    expect(await collect(none.synthesize(request()))).toBe(0);

    const slow = new FakeTextToSpeech({ name: 'slow', firstChunkDelayMs: 5000 });
    const spare = new FakeTextToSpeech({ name: 'spare' });
    const controller = new AbortController();
    const aborted = new FallbackTextToSpeech([slow, spare], { clock: realClock, voices: {}, firstAudioTimeoutMs: 10_000 });
    setTimeout(() => controller.abort(), 20);
    expect(await collect(aborted.synthesize(request(controller.signal)))).toBe(0);
    expect(slow.syntheses[0].outcome).toBe('aborted');
    expect(spare.syntheses).toHaveLength(0);
  });
});
