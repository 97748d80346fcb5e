import { ElevenLabsTextToSpeech, ElevenLabsTextToSpeechOptions } from './elevenlabs-tts';
import { fakeSpeechPcm } from './fake-tts';
import { SpeechError } from './speech-error';
import { SpeechChunk, SynthesisRequest } from './text-to-speech';
import { FakeElevenLabsServer } from './testing/fake-elevenlabs-server';

const TEXT = 'Hello there, caller.'; // 20 characters: 1 s of fake audio

describe('ElevenLabsTextToSpeech against an ElevenLabs-protocol server', () => {
  let server: FakeElevenLabsServer;
  let baseUrl: string;

  // The SDK is large: its first load (3 s here alone, over 10 s on a loaded machine) is paid once here, not inside the
  // first test's 5 s. The voice loads it itself, on first use; this only warms jest's module registry.
  beforeAll(() => Promise.all([import('@elevenlabs/elevenlabs-js'), import('@elevenlabs/elevenlabs-js/core')]), 60_000);

  beforeEach(async () => {
    server = new FakeElevenLabsServer({ apiKey: 'xi-test' });
    baseUrl = await server.start();
  });

  afterEach(async () => {
    await server.stop();
  });

  const tts = (options: Partial<ElevenLabsTextToSpeechOptions> = {}) =>
    new ElevenLabsTextToSpeech({ apiKey: 'xi-test', baseUrl, defaultVoiceId: 'voice-default', ...options });
  const request = (overrides: Partial<SynthesisRequest> = {}): SynthesisRequest => ({
    text: TEXT,
    language: 'en-US',
    signal: new AbortController().signal,
    ...overrides,
  });

  it('streams pcm_16000 from the stream endpoint with the key, model, voice and language, as the vendor sent it', async () => {
    const chunks = await collect(tts().synthesize(request({ voiceId: 'voice-1' })));

    expect(concat(chunks)).toEqual(fakeSpeechPcm(TEXT, 16000));
    expect(chunks.every((c) => c.sampleRate === 16000)).toBe(true);
    const [sent] = server.requests;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/v1/text-to-speech/voice-1/stream');
    expect(sent.query).toEqual({ output_format: 'pcm_16000' });
    expect(sent.headers['xi-api-key']).toBe('xi-test');
    expect(sent.body).toEqual({ text: TEXT, model_id: 'eleven_flash_v2_5', language_code: 'en' });
  });

  it('uses the default voice, and the model the request names (without language_code for models not taking it)', async () => {
    await collect(tts().synthesize(request({ model: 'eleven_multilingual_v2' })));

    const [sent] = server.requests;
    expect(FakeElevenLabsServer.voiceIdOf(sent)).toBe('voice-default');
    expect(sent.body).toEqual({ text: TEXT, model_id: 'eleven_multilingual_v2' });
  });

  it('asks for the configured PCM rate and states it on every chunk', async () => {
    const chunks = await collect(tts({ sampleRate: 24000 }).synthesize(request()));

    expect(server.requests[0].query['output_format']).toBe('pcm_24000');
    expect(chunks.every((c) => c.sampleRate === 24000)).toBe(true);
    expect(concat(chunks)).toEqual(fakeSpeechPcm(TEXT, 24000));
  });

  it('sends the speed in voice_settings clamped to 0.7-1.2, and no voice_settings at normal speed', async () => {
    for (const speed of [2, 0.5, 1.1, 1]) await collect(tts().synthesize(request({ speed })));

    expect(server.requests.map((r) => r.body?.['voice_settings'])).toEqual([
      { speed: 1.2 },
      { speed: 0.7 },
      { speed: 1.1 },
      undefined,
    ]);
  });

  it('yields audio as it arrives, before the response has ended', async () => {
    server.configure({ chunkMs: 100, chunkIntervalMs: 40 });
    const started = Date.now();
    let firstAt = 0;
    let serverStateAtFirst = '';

    const chunks = await collect(tts().synthesize(request()), () => {
      if (firstAt) return;
      firstAt = Date.now() - started;
      serverStateAtFirst = server.requests[0].outcome;
    });

    expect(serverStateAtFirst).toBe('streaming');
    expect(firstAt).toBeLessThan(Date.now() - started - 150);
    expect(chunks.length).toBeGreaterThanOrEqual(5);
    expect(concat(chunks)).toEqual(fakeSpeechPcm(TEXT, 16000));
  });

  it('reassembles samples split across odd byte boundaries', async () => {
    server.configure({ chunkBytes: 333, chunkIntervalMs: 2 });

    const chunks = await collect(tts().synthesize(request()));

    expect(chunks.length).toBeGreaterThan(10);
    expect(concat(chunks)).toEqual(fakeSpeechPcm(TEXT, 16000));
  });

  it('stops at once when aborted mid-stream, and the server sees the connection closed', async () => {
    server.configure({ chunkMs: 100, chunkIntervalMs: 50 });
    const controller = new AbortController();
    let abortedAt = 0;
    let received = 0;

    const error = await collect(tts().synthesize(request({ signal: controller.signal })), () => {
      received++;
      if (received === 2) {
        abortedAt = Date.now();
        controller.abort();
      }
    }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SpeechError);
    expect(error).toMatchObject({ code: 'aborted', provider: 'elevenlabs' });
    expect(Date.now() - abortedAt).toBeLessThan(250);
    expect(received).toBe(2);
    await expect(server.requests[0].finished).resolves.toBe('closed');
    expect(server.requests[0].bytesSent).toBeLessThan(fakeSpeechPcm(TEXT, 16000).byteLength);
  });

  it('aborts while waiting for the first byte', async () => {
    server.configure({ firstByteDelayMs: 2000 });
    const controller = new AbortController();
    // Aborted once the server holds the request (a fixed delay could fire before a loaded machine sent it).
    const held = setInterval(() => server.requests.length > 0 && controller.abort(), 10);
    const started = Date.now();

    await expect(collect(tts().synthesize(request({ signal: controller.signal })))).rejects.toMatchObject({ code: 'aborted' });
    clearInterval(held);
    expect(Date.now() - started).toBeLessThan(1500);
    await expect(server.requests[0].finished).resolves.toBe('closed');
  });

  it('makes no request when the signal has already fired', async () => {
    const controller = new AbortController();
    controller.abort();

    await expect(collect(tts().synthesize(request({ signal: controller.signal })))).rejects.toMatchObject({ code: 'aborted' });
    expect(server.requests).toHaveLength(0);
  });

  it('closes the connection when the consumer stops reading early', async () => {
    server.configure({ chunkMs: 100, chunkIntervalMs: 50 });

    for await (const _chunk of tts().synthesize(request())) break;

    await expect(server.requests[0].finished).resolves.toBe('closed');
  });

  it('reports a rejected key as an http error 401 with the vendor reason', async () => {
    const error = await collect(tts({ apiKey: 'wrong' }).synthesize(request())).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SpeechError);
    expect(error).toMatchObject({ code: 'http', status: 401, provider: 'elevenlabs' });
    expect((error as Error).message).toContain('invalid_api_key');
  });

  it('reports a server error as an http error with its status, without retrying by default', async () => {
    server.failNext(500, 'boom');

    await expect(collect(tts().synthesize(request()))).rejects.toMatchObject({ code: 'http', status: 500 });
    expect(server.requests).toHaveLength(1);
  });

  it('times out when no audio starts in time', async () => {
    server.configure({ firstByteDelayMs: 1000 });

    await expect(collect(tts({ timeoutMs: 100 }).synthesize(request()))).rejects.toMatchObject({ code: 'timeout' });
  });

  it('times out when the stream stalls after it started', async () => {
    // The first chunk comes at once and the next only after 3 s: a loaded machine still delivers the first in time.
    server.configure({ chunkMs: 100, chunkIntervalMs: 3000 });
    const chunks: SpeechChunk[] = [];

    await expect(collect(tts({ timeoutMs: 600 }).synthesize(request()), (c) => chunks.push(c))).rejects.toMatchObject({
      code: 'timeout',
    });
    expect(chunks).toHaveLength(1);
  });

  it('yields nothing and makes no request for blank text', async () => {
    await expect(collect(tts().synthesize(request({ text: ' ' })))).resolves.toEqual([]);
    expect(server.requests).toHaveLength(0);
  });

  it('reports an unreachable server as a connection error', async () => {
    await server.stop();

    await expect(collect(tts().synthesize(request()))).rejects.toMatchObject({ code: 'connection', provider: 'elevenlabs' });
  });
});

describe('the ElevenLabs SDK', () => {
  afterEach(() => jest.dontMock('@elevenlabs/elevenlabs-js'));

  // Loads the SDK again, in a module registry of its own: a longer timeout, as for the first load above.
  it('is loaded when an ElevenLabs voice is made, not with the speech library (about 50 MB of heap)', async () => {
    let loaded = 0;
    jest.doMock('@elevenlabs/elevenlabs-js', () => {
      loaded++;
      return jest.requireActual('@elevenlabs/elevenlabs-js');
    });
    await jest.isolateModulesAsync(async () => {
      const speech = await import('./index');
      expect(loaded).toBe(0);
      new speech.ElevenLabsTextToSpeech({ apiKey: 'xi-test' });
      for (let tick = 0; tick < 100 && loaded === 0; tick++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(loaded).toBe(1);
    });
  }, 60_000);
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
