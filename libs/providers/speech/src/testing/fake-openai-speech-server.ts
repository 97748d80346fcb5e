import { wavHeader } from '@parley/audio';
import { IncomingHttpHeaders } from 'node:http';
import { FakeSpeechAnswer, FakeSpeechServer, FakeSpeechServerOptions, FakeSpeechServerRequest } from './fake-speech-server-base';

/** OpenAI's `pcm` speech format: 24 kHz, 16-bit signed little-endian, mono. */
export const OPENAI_SPEECH_SAMPLE_RATE = 24000;

/**
 * A real HTTP server on 127.0.0.1 speaking OpenAI's `POST /v1/audio/speech` wire protocol, so tests run the
 * official `openai` SDK end to end: JSON body (`model`, `input`, `voice`, `response_format`, `speed`), bearer key.
 * Answers `pcm` (raw 24 kHz PCM16 LE, tone audio as fakeSpeechPcm) or `wav` (the same behind a streaming WAV
 * header), chunked; errors in OpenAI's `{"error": {message, type, param, code}}` shape. Other formats (the real
 * default is mp3) answer 400 here.
 */
export class FakeOpenAiSpeechServer extends FakeSpeechServer {
  constructor(options: FakeSpeechServerOptions = {}) {
    super(options);
  }

  // The SDK's base URL includes the version segment.
  protected baseUrlFor(origin: string): string {
    return `${origin}/v1`;
  }

  protected isRoute(method: string, path: string): boolean {
    return method === 'POST' && path === '/v1/audio/speech';
  }

  protected checkAuth(headers: IncomingHttpHeaders): { status: number; body: unknown } | undefined {
    const auth = headers.authorization;
    if (auth === `Bearer ${this.options.apiKey}`) return undefined;
    const message = auth
      ? `Incorrect API key provided: ${auth.replace(/^Bearer\s+/i, '').slice(0, 4)}****. You can find your API key at https://platform.openai.com/account/api-keys.`
      : "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).";
    return {
      status: 401,
      body: { error: { message, type: 'invalid_request_error', param: null, code: auth ? 'invalid_api_key' : null } },
    };
  }

  protected errorBody(status: number, message: string): unknown {
    const type = status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
    return { error: { message, type, param: null, code: null } };
  }

  protected answer(request: FakeSpeechServerRequest): FakeSpeechAnswer {
    const body = request.body;
    if (!body) return { status: 400, body: this.errorBody(400, 'We could not parse the JSON body of your request.') };
    for (const field of ['model', 'input', 'voice'] as const) {
      if (body[field] === undefined) {
        return { status: 400, body: { error: { message: `Missing required parameter: '${field}'.`, type: 'invalid_request_error', param: field, code: 'missing_required_parameter' } } };
      }
    }
    const input = body['input'];
    if (typeof input !== 'string') return { status: 400, body: this.errorBody(400, "Invalid type for 'input': expected a string.") };
    const speed = body['speed'];
    if (speed !== undefined && (typeof speed !== 'number' || speed < 0.25 || speed > 4)) {
      return { status: 400, body: this.errorBody(400, `Invalid 'speed': ${String(speed)}. Expected a value between 0.25 and 4.0.`) };
    }
    const format = body['response_format'] ?? 'mp3';
    const pcm = this.speech(input, OPENAI_SPEECH_SAMPLE_RATE);
    if (format === 'pcm') {
      return { audio: { pcm, sampleRate: OPENAI_SPEECH_SAMPLE_RATE, contentType: 'audio/pcm' } };
    }
    if (format === 'wav') {
      // Streamed WAV: the sizes are not known up front.
      const header = wavHeader(0, OPENAI_SPEECH_SAMPLE_RATE, 1, 16);
      header.writeUInt32LE(0xffffffff, 4);
      header.writeUInt32LE(0xffffffff, 40);
      return { audio: { pcm, sampleRate: OPENAI_SPEECH_SAMPLE_RATE, contentType: 'audio/wav', prefix: header } };
    }
    return { status: 400, body: this.errorBody(400, `FakeOpenAiSpeechServer implements only pcm and wav, not ${String(format)}`) };
  }
}
