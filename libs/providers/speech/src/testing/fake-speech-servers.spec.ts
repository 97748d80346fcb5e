import { parseWav, pcm16FromBytes } from '@parley/audio';
import { fakeSpeechPcm } from '../fake-tts';
import { FakeElevenLabsServer } from './fake-elevenlabs-server';
import { FakeOpenAiSpeechServer } from './fake-openai-speech-server';

// The fakes' wire protocol checked with plain fetch, independently of the SDKs the adapters use.
describe('FakeElevenLabsServer', () => {
  const server = new FakeElevenLabsServer();
  let base: string;

  beforeAll(async () => {
    base = await server.start();
  });
  afterAll(() => server.stop());

  const post = (path: string, body: unknown, key: string | null = 'test-key') =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { 'xi-api-key': key } : {}) },
      body: JSON.stringify(body),
    });

  it('streams raw PCM at the rate of output_format, chunked', async () => {
    const res = await post('/v1/text-to-speech/abc/stream?output_format=pcm_22050', { text: 'Hi there', model_id: 'm' });

    expect(res.status).toBe(200);
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    expect(pcm16FromBytes(Buffer.from(await res.arrayBuffer()))).toEqual(fakeSpeechPcm('Hi there', 22050));
    expect(server.requests.at(-1)).toMatchObject({ query: { output_format: 'pcm_22050' }, body: { text: 'Hi there', model_id: 'm' } });
  });

  it('answers 401 in ElevenLabs’ error shape without the right key', async () => {
    const wrong = await post('/v1/text-to-speech/abc/stream?output_format=pcm_16000', { text: 'x' }, 'nope');
    const missing = await post('/v1/text-to-speech/abc/stream?output_format=pcm_16000', { text: 'x' }, null);

    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ detail: { status: 'invalid_api_key', message: 'Invalid API key' } });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ detail: { status: 'needs_authorization' } });
  });

  it('answers 422 without text, 400 for formats it does not implement, and scripted failures', async () => {
    expect((await post('/v1/text-to-speech/abc/stream?output_format=pcm_16000', {})).status).toBe(422);
    expect((await post('/v1/text-to-speech/abc/stream', { text: 'x' })).status).toBe(400);
    server.failNext(503, 'busy');
    const failed = await post('/v1/text-to-speech/abc/stream?output_format=pcm_16000', { text: 'x' });
    expect(failed.status).toBe(503);
    expect(await failed.json()).toEqual({ detail: { status: 'internal_server_error', message: 'busy' } });
  });
});

describe('FakeOpenAiSpeechServer', () => {
  const server = new FakeOpenAiSpeechServer();
  let base: string;

  beforeAll(async () => {
    base = await server.start();
  });
  afterAll(() => server.stop());

  const post = (body: unknown, key = 'test-key') =>
    fetch(`${base}/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    });

  it('streams 24 kHz PCM for response_format pcm, and the same as WAV for wav', async () => {
    const pcm = await post({ model: 'gpt-4o-mini-tts', voice: 'alloy', input: 'Hello', response_format: 'pcm' });
    const wav = await post({ model: 'gpt-4o-mini-tts', voice: 'alloy', input: 'Hello', response_format: 'wav' });

    expect(base).toMatch(/\/v1$/);
    expect(pcm16FromBytes(Buffer.from(await pcm.arrayBuffer()))).toEqual(fakeSpeechPcm('Hello', 24000));
    const parsed = parseWav(Buffer.from(await wav.arrayBuffer()));
    expect(parsed.sampleRate).toBe(24000);
    expect(parsed.samples).toEqual(fakeSpeechPcm('Hello', 24000));
  });

  it('answers errors in OpenAI’s shape: 401 for a wrong key, 400 for a missing field or bad speed', async () => {
    const unauthorised = await post({ model: 'm', voice: 'alloy', input: 'x', response_format: 'pcm' }, 'sk-bad');
    const missing = await post({ model: 'm', input: 'x', response_format: 'pcm' });
    const badSpeed = await post({ model: 'm', voice: 'alloy', input: 'x', response_format: 'pcm', speed: 5 });

    expect(unauthorised.status).toBe(401);
    expect(await unauthorised.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'invalid_api_key' } });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: { param: 'voice' } });
    expect(badSpeed.status).toBe(400);
  });
});
