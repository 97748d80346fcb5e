import { fakeSpeechPcm } from './fake-tts';
import { OpenAiTextToSpeech, OpenAiTextToSpeechOptions } from './openai-tts';
import { SpeechError } from './speech-error';
import { SpeechChunk, SynthesisRequest } from './text-to-speech';
import { FakeOpenAiSpeechServer } from './testing/fake-openai-speech-server';

const TEXT = 'Hello there, caller.'; // 20 characters: 1 s of fake audio

describe('OpenAiTextToSpeech against an OpenAI-protocol speech server', () => {
  let server: FakeOpenAiSpeechServer;
  let baseUrl: string;

  beforeEach(async () => {
    server = new FakeOpenAiSpeechServer({ apiKey: 'sk-test' });
    baseUrl = await server.start();
  });

  afterEach(async () => {
    await server.stop();
  });

  const tts = (options: Partial<OpenAiTextToSpeechOptions> = {}) => new OpenAiTextToSpeech({ apiKey: 'sk-test', baseUrl, ...options });
  const request = (overrides: Partial<SynthesisRequest> = {}): SynthesisRequest => ({
    text: TEXT,
    language: 'en-US',
    signal: new AbortController().signal,
    ...overrides,
  });

  it('asks /v1/audio/speech for pcm with the default model and voice, and yields it at 24 kHz', async () => {
    const chunks = await collect(tts().synthesize(request()));

    expect(concat(chunks)).toEqual(fakeSpeechPcm(TEXT, 24000));
    expect(chunks.every((c) => c.sampleRate === 24000)).toBe(true);
    const [sent] = server.requests;
    expect(sent.path).toBe('/v1/audio/speech');
    expect(sent.headers.authorization).toBe('Bearer sk-test');
    expect(sent.body).toEqual({ model: 'gpt-4o-mini-tts', voice: 'alloy', input: TEXT, response_format: 'pcm' });
  });

  it('passes the request voice, model and speed through (speed clamped to 0.25-4)', async () => {
    await collect(tts().synthesize(request({ voiceId: 'coral', model: 'tts-1', speed: 3.5 })));
    await collect(tts({ defaultVoice: 'sage', model: 'tts-1-hd' }).synthesize(request({ speed: 9 })));

    expect(server.requests[0].body).toMatchObject({ voice: 'coral', model: 'tts-1', speed: 3.5 });
    expect(server.requests[1].body).toMatchObject({ voice: 'sage', model: 'tts-1-hd', speed: 4 });
  });

  it('yields audio as it arrives, before the response has ended', async () => {
    server.configure({ chunkMs: 100, chunkIntervalMs: 40 });
    let serverStateAtFirst = '';

    const chunks = await collect(tts().synthesize(request()), () => {
      serverStateAtFirst ||= server.requests[0].outcome;
    });

    expect(serverStateAtFirst).toBe('streaming');
    expect(chunks.length).toBeGreaterThanOrEqual(5);
    expect(concat(chunks)).toEqual(fakeSpeechPcm(TEXT, 24000));
  });

  it('reassembles samples split across odd byte boundaries', async () => {
    server.configure({ chunkBytes: 1001, chunkIntervalMs: 2 });

    const chunks = await collect(tts().synthesize(request()));

    expect(chunks.length).toBeGreaterThan(10);
    expect(concat(chunks)).toEqual(fakeSpeechPcm(TEXT, 24000));
  });

  it('stops at once when aborted mid-stream, and the server sees the connection closed', async () => {
    server.configure({ chunkMs: 100, chunkIntervalMs: 50 });
    const controller = new AbortController();
    let abortedAt = 0;
    let received = 0;

    const error = await collect(tts().synthesize(request({ signal: controller.signal })), () => {
      if (++received === 2) {
        abortedAt = Date.now();
        controller.abort();
      }
    }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SpeechError);
    expect(error).toMatchObject({ code: 'aborted', provider: 'openai' });
    expect(Date.now() - abortedAt).toBeLessThan(250);
    await expect(server.requests[0].finished).resolves.toBe('closed');
  });

  it('aborts while waiting for the first byte', async () => {
    server.configure({ firstByteDelayMs: 2000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();

    await expect(collect(tts().synthesize(request({ signal: controller.signal })))).rejects.toMatchObject({ code: 'aborted' });
    expect(Date.now() - started).toBeLessThan(1500);
    await expect(server.requests[0].finished).resolves.toBe('closed');
  });

  it('reports a rejected key as an http error 401', async () => {
    const error = await collect(tts({ apiKey: 'sk-wrong' }).synthesize(request())).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SpeechError);
    expect(error).toMatchObject({ code: 'http', status: 401, provider: 'openai' });
    expect((error as Error).message).toContain('Incorrect API key');
  });

  it('reports a server error as an http error with its status, without retrying by default', async () => {
    server.failNext(500, 'boom');

    await expect(collect(tts().synthesize(request()))).rejects.toMatchObject({ code: 'http', status: 500 });
    expect(server.requests).toHaveLength(1);
  });

  it('times out when no audio starts in time, and when the stream stalls', async () => {
    server.configure({ firstByteDelayMs: 1000 });
    await expect(collect(tts({ timeoutMs: 100 }).synthesize(request()))).rejects.toMatchObject({ code: 'timeout' });

    server.configure({ firstByteDelayMs: 0, chunkMs: 100, chunkIntervalMs: 1000 });
    await expect(collect(tts({ timeoutMs: 150 }).synthesize(request()))).rejects.toMatchObject({ code: 'timeout' });
  });

  it('yields nothing and makes no request for blank text', async () => {
    await expect(collect(tts().synthesize(request({ text: ' ' })))).resolves.toEqual([]);
    expect(server.requests).toHaveLength(0);
  });

  it('reports an unreachable server as a connection error', async () => {
    await server.stop();

    await expect(collect(tts().synthesize(request()))).rejects.toMatchObject({ code: 'connection', provider: 'openai' });
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
