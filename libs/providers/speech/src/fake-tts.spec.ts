import { FakeTextToSpeech, fakeSpeechPcm, fakeToneFrequency } from './fake-tts';
import { SpeechError } from './speech-error';
import { SpeechChunk, SynthesisRequest } from './text-to-speech';

const request = (text: string, overrides: Partial<SynthesisRequest> = {}): SynthesisRequest => ({
  text,
  language: 'en-US',
  signal: new AbortController().signal,
  ...overrides,
});

describe('FakeTextToSpeech', () => {
  it('produces 50 ms of 16 kHz audio per character in 100 ms chunks', async () => {
    const chunks = await collect(new FakeTextToSpeech().synthesize(request('Twelve chars'))); // 600 ms

    expect(chunks.map((c) => c.pcm.length)).toEqual([1600, 1600, 1600, 1600, 1600, 1600]);
    expect(chunks.every((c) => c.sampleRate === 16000)).toBe(true);
    expect(concat(chunks)).toEqual(fakeSpeechPcm('Twelve chars', 16000));
  });

  it('plays a tone whose frequency identifies the sentence', async () => {
    const tts = new FakeTextToSpeech({ msPerChar: 100 });
    const first = concat(await collect(tts.synthesize(request('First sentence.'))));
    const second = concat(await collect(tts.synthesize(request('Second sentence.'))));

    expect(fakeToneFrequency('First sentence.')).not.toBe(fakeToneFrequency('Second sentence.'));
    expect(dominantFrequency(first, 16000)).toBeCloseTo(fakeToneFrequency('First sentence.'), -1);
    expect(dominantFrequency(second, 16000)).toBeCloseTo(fakeToneFrequency('Second sentence.'), -1);
  });

  it('honours the configured name, rate, length and chunk size', async () => {
    const tts = new FakeTextToSpeech({ name: 'backup-tts', sampleRate: 8000, msPerChar: 10, chunkMs: 20 });

    const chunks = await collect(tts.synthesize(request('x'.repeat(10)))); // 100 ms

    expect(tts.name).toBe('backup-tts');
    expect(chunks.map((c) => c.pcm.length)).toEqual([160, 160, 160, 160, 160]);
    expect(chunks[0].sampleRate).toBe(8000);
  });

  it('delays the first chunk and paces the later ones when asked', async () => {
    const tts = new FakeTextToSpeech({ firstChunkDelayMs: 80, chunkIntervalMs: 40 });
    const started = Date.now();
    const times: number[] = [];

    await collect(tts.synthesize(request('x'.repeat(6))), () => times.push(Date.now() - started)); // 3 chunks

    expect(times[0]).toBeGreaterThanOrEqual(75);
    expect(times[2] - times[0]).toBeGreaterThanOrEqual(75);
  });

  it('yields every chunk at once by default', async () => {
    const started = Date.now();

    await collect(new FakeTextToSpeech().synthesize(request('x'.repeat(200)))); // 10 s of audio

    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('records each request and how it ended', async () => {
    const tts = new FakeTextToSpeech();
    const controller = new AbortController();
    await collect(tts.synthesize(request('Done.', { voiceId: 'v1', speed: 1.2 })));
    await collect(tts.synthesize(request('Cut off here.', { signal: controller.signal })), () => controller.abort()).catch(() => undefined);
    for await (const _chunk of tts.synthesize(request('Left early.'))) break;

    expect(tts.requests.map((r) => r.text)).toEqual(['Done.', 'Cut off here.', 'Left early.']);
    expect(tts.requests[0]).toMatchObject({ voiceId: 'v1', speed: 1.2, language: 'en-US' });
    expect(tts.syntheses.map((s) => [s.outcome, s.chunks])).toEqual([
      ['completed', 3], // 250 ms
      ['aborted', 1],
      ['abandoned', 1],
    ]);
  });

  it('fails the next synthesis with the given error, before audio or after some chunks', async () => {
    const tts = new FakeTextToSpeech();
    const boom = new SpeechError('elevenlabs: HTTP 503', { code: 'http', provider: 'fake-tts', status: 503 });
    tts.failNext(boom).failNext(new Error('dropped'), { afterChunks: 2 });
    const received: SpeechChunk[] = [];

    await expect(collect(tts.synthesize(request('x'.repeat(10))))).rejects.toBe(boom);
    await expect(collect(tts.synthesize(request('x'.repeat(10))), (c) => received.push(c))).rejects.toThrow('dropped');
    await expect(collect(tts.synthesize(request('x'.repeat(10))))).resolves.toHaveLength(5);

    expect(received).toHaveLength(2);
    expect(tts.syntheses.map((s) => s.outcome)).toEqual(['failed', 'failed', 'completed']);
  });

  it('throws aborted at once when aborted while waiting for the first chunk', async () => {
    const tts = new FakeTextToSpeech({ firstChunkDelayMs: 5000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    const started = Date.now();

    const error = await collect(tts.synthesize(request('Hello.', { signal: controller.signal }))).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SpeechError);
    expect(error).toMatchObject({ code: 'aborted', provider: 'fake-tts' });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('throws aborted at once when aborted between paced chunks', async () => {
    const tts = new FakeTextToSpeech({ chunkIntervalMs: 5000 });
    const controller = new AbortController();
    const started = Date.now();

    await expect(
      collect(tts.synthesize(request('x'.repeat(20), { signal: controller.signal })), () => {
        setTimeout(() => controller.abort(), 20);
      }),
    ).rejects.toMatchObject({ code: 'aborted' });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('throws aborted before any audio when the signal has already fired', async () => {
    const controller = new AbortController();
    controller.abort();

    await expect(collect(new FakeTextToSpeech().synthesize(request('Hi.', { signal: controller.signal })))).rejects.toMatchObject({
      code: 'aborted',
    });
  });
});

async function collect(audio: AsyncIterable<SpeechChunk>, onChunk?: (chunk: SpeechChunk) => void): Promise<SpeechChunk[]> {
  const chunks: SpeechChunk[] = [];
  for await (const chunk of audio) {
    chunks.push(chunk);
    onChunk?.(chunk);
  }
  return chunks;
}

function concat(chunks: SpeechChunk[]): Int16Array {
  const out = new Int16Array(chunks.reduce((n, c) => n + c.pcm.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c.pcm, at);
    at += c.pcm.length;
  }
  return out;
}

/** Frequency from the zero-crossing rate (enough for a pure tone). */
function dominantFrequency(pcm: Int16Array, sampleRate: number): number {
  let crossings = 0;
  for (let i = 1; i < pcm.length; i++) if ((pcm[i - 1] < 0) !== (pcm[i] < 0)) crossings++;
  return crossings / 2 / (pcm.length / sampleRate);
}
