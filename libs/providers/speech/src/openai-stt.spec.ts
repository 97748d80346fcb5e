import { OpenAiSpeechToText, OpenAiSpeechToTextOptions } from './openai-stt';
import { SpeechError } from './speech-error';
import { SttEvent, SttStream } from './speech-to-text';
import { FakeOpenAiTranscriptionServer } from './testing/fake-openai-transcription-server';

const RATE = 8000;

/** `ms` of a 440 Hz tone as 20 ms PCM16 frames. */
function tone(ms: number): Int16Array[] {
  const perFrame = RATE / 50;
  return Array.from({ length: ms / 20 }, (_, f) =>
    Int16Array.from({ length: perFrame }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * (f * perFrame + i)) / RATE))),
  );
}

async function until(check: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('OpenAiSpeechToText against an OpenAI-protocol transcription server', () => {
  let server: FakeOpenAiTranscriptionServer;
  let baseURL: string;
  let events: SttEvent[];
  let errors: SpeechError[];
  let stream: SttStream | undefined;

  beforeEach(async () => {
    server = new FakeOpenAiTranscriptionServer();
    baseURL = await server.start();
    events = [];
    errors = [];
    stream = undefined;
  });

  afterEach(async () => {
    await stream?.close();
    await server.stop();
  });

  const open = async (options: Partial<OpenAiSpeechToTextOptions> = {}, stt: { language?: string; model?: string } = {}) => {
    const provider = new OpenAiSpeechToText({ baseURL, ...options });
    stream = await provider.open(
      { language: stt.language ?? 'en-US', sampleRate: RATE, ...(stt.model ? { model: stt.model } : {}) },
      { onTranscript: (event) => events.push(event), onError: (error) => errors.push(error) },
    );
    return stream;
  };
  const write = (s: SttStream, audio: Int16Array[]) => audio.forEach((frame) => s.write(frame));

  it('finalize posts a WAV of the audio written and reports its text as a final end of turn', async () => {
    server.transcripts('What time do you open?');
    const s = await open();

    write(s, tone(500));
    s.finalize();
    await until(() => events.length > 0, 'the final');

    expect(events).toEqual([{ type: 'final', text: 'What time do you open?', endOfTurn: true }]);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({
      path: '/v1/audio/transcriptions',
      model: 'gpt-4o-mini-transcribe',
      language: 'en',
      responseFormat: 'json',
      fileName: 'audio.wav',
      fileType: 'audio/wav',
      audioBytes: 44 + 500 * (RATE / 1000) * 2,
      wav: { sampleRate: RATE, channels: 1, samples: 4000, durationMs: 500 },
    });
  });

  it('sends only the audio written since the last finalize', async () => {
    server.transcripts('one', 'two');
    const s = await open();

    write(s, tone(400));
    s.finalize();
    write(s, tone(200));
    s.finalize();
    await until(() => events.length === 2, 'two finals');

    expect(server.requests.map((r) => r.wav?.durationMs).sort()).toEqual([200, 400]);
    expect(events.map((e) => e.text)).toEqual(['one', 'two']);
  });

  it('reports the answers in the order of the finalizes, however the server orders them', async () => {
    server.transcripts('first', 'second');
    const s = await open();

    server.delayMs = 150;
    write(s, tone(100));
    s.finalize();
    await until(() => server.requests.length === 1, 'the first request');
    server.delayMs = 0;
    write(s, tone(100));
    s.finalize();
    await until(() => events.length === 2, 'two finals');

    expect(events.map((e) => e.text)).toEqual(['first', 'second']);
  });

  it('uses the model the stream names and the primary subtag of its language', async () => {
    const s = await open({ model: 'whisper-1' }, { language: 'pt-BR', model: 'gpt-4o-transcribe' });

    write(s, tone(100));
    s.finalize();
    await until(() => events.length > 0, 'the final');

    expect(server.requests[0]).toMatchObject({ model: 'gpt-4o-transcribe', language: 'pt' });
  });

  it('finalize without audio reports an empty end of turn and sends no request', async () => {
    const s = await open();

    s.finalize();
    await until(() => events.length > 0, 'the final');

    expect(events).toEqual([{ type: 'final', text: '', endOfTurn: true }]);
    expect(server.requests).toEqual([]);
  });

  it('sends the key as a bearer token, and no Authorization header without one', async () => {
    const withKey = await open({ apiKey: 'sk-test' });
    write(withKey, tone(100));
    withKey.finalize();
    const without = await open();
    write(without, tone(100));
    without.finalize();
    await until(() => events.length === 2, 'two finals');

    const auth = server.requests.map((r) => r.headers.authorization);
    expect(auth).toContain('Bearer sk-test');
    expect(auth).toContain(undefined);
  });

  it('reports an error status through onError as an http SpeechError', async () => {
    server.failNext(500);
    const s = await open();

    write(s, tone(200));
    s.finalize();
    await until(() => errors.length > 0, 'an error');

    expect(errors[0]).toBeInstanceOf(SpeechError);
    expect(errors[0]).toMatchObject({ code: 'http', status: 500, provider: 'openai' });
    expect(events).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it('reports a slow answer as a timeout', async () => {
    server.delayMs = 500;
    const s = await open({ timeoutMs: 100, name: 'groq' });

    write(s, tone(100));
    s.finalize();
    await until(() => errors.length > 0, 'an error');

    expect(errors[0]).toMatchObject({ code: 'timeout', provider: 'groq' });
  });

  it('reports an unreachable server as a connection error', async () => {
    const s = await open();
    await server.stop();

    write(s, tone(100));
    s.finalize();
    await until(() => errors.length > 0, 'an error');

    expect(errors[0]).toMatchObject({ code: 'connection', provider: 'openai' });
  });

  it('close abandons a transcription in flight: no event follows', async () => {
    server.delayMs = 100;
    server.transcripts('never heard');
    const s = await open();

    write(s, tone(100));
    s.finalize();
    await until(() => server.requests.length === 1, 'the request');
    await s.close();
    await sleep(200);

    expect(events).toEqual([]);
    expect(errors).toEqual([]);
  });
});
