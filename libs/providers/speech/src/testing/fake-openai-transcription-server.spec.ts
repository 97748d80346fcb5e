import { encodeWav } from '@parley/audio';
import { FakeOpenAiTranscriptionServer } from './fake-openai-transcription-server';

function form(fields: Record<string, string>, wav?: Buffer): FormData {
  const body = new FormData();
  if (wav) body.append('file', new Blob([new Uint8Array(wav)], { type: 'audio/wav' }), 'clip.wav');
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  return body;
}

describe('FakeOpenAiTranscriptionServer', () => {
  let server: FakeOpenAiTranscriptionServer;
  let base: string;

  beforeEach(async () => {
    server = new FakeOpenAiTranscriptionServer({ apiKey: 'sk-1' });
    base = await server.start();
  });

  afterEach(() => server.stop());

  const post = (body: FormData, key = 'sk-1') =>
    fetch(`${base}/audio/transcriptions`, { method: 'POST', body, headers: { Authorization: `Bearer ${key}` } });

  it('reads the multipart form and answers the next scripted text', async () => {
    server.transcripts('hello', 'again');
    const wav = encodeWav(new Int16Array(24_000), 16_000);

    const res = await post(form({ model: 'whisper-1', language: 'de', response_format: 'json' }, wav));

    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ text: 'hello' });
    expect(server.requests[0]).toMatchObject({
      model: 'whisper-1',
      language: 'de',
      responseFormat: 'json',
      fileName: 'clip.wav',
      fileType: 'audio/wav',
      audioBytes: wav.length,
      wav: { sampleRate: 16_000, channels: 1, samples: 24_000, durationMs: 1500 },
    });
  });

  it('answers plain text for response_format=text', async () => {
    server.transcripts('plain');

    const res = await post(form({ model: 'whisper-1', response_format: 'text' }, encodeWav(new Int16Array(80), 8000)));

    expect(await res.text()).toBe('plain\n');
  });

  it('refuses a wrong key with 401, a missing file with 400, and scripted failures with their status', async () => {
    server.failNext(503);

    expect((await post(form({ model: 'whisper-1' }), 'sk-wrong')).status).toBe(401);
    expect((await post(form({ model: 'whisper-1' }, encodeWav(new Int16Array(8), 8000)))).status).toBe(503);
    const missing = await post(form({ model: 'whisper-1' }));
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
  });
});
