import { IncomingHttpHeaders } from 'node:http';
import { FakeSpeechAnswer, FakeSpeechServer, FakeSpeechServerOptions, FakeSpeechServerRequest } from './fake-speech-server-base';

const ROUTE = /^\/v1\/text-to-speech\/([^/]+)(\/stream)?$/;
const PCM_FORMAT = /^pcm_(8000|16000|22050|24000|32000|44100|48000)$/;

/**
 * A real HTTP server on 127.0.0.1 speaking ElevenLabs' text-to-speech wire protocol, so tests run the official SDK
 * end to end: `POST /v1/text-to-speech/{voice_id}/stream` (and the non-streaming `/v1/text-to-speech/{voice_id}`)
 * with `?output_format=pcm_<rate>`, a JSON body (`text`, `model_id`, `voice_settings`, …) and the `xi-api-key`
 * header. Answers raw PCM16 LE at the asked rate (tone audio, see fakeSpeechPcm), chunked; errors in ElevenLabs'
 * `{"detail": {"status", "message"}}` shape. Only the `pcm_*` output formats are implemented (the real default,
 * mp3, answers 400 here).
 */
export class FakeElevenLabsServer extends FakeSpeechServer {
  constructor(options: FakeSpeechServerOptions = {}) {
    super(options);
  }

  /** The voice id of a recorded request (from its path). */
  static voiceIdOf(request: FakeSpeechServerRequest): string | undefined {
    const match = ROUTE.exec(request.path);
    return match ? decodeURIComponent(match[1]) : undefined;
  }

  // The SDK's base URL is the API origin: it appends `v1/…` itself.
  protected baseUrlFor(origin: string): string {
    return origin;
  }

  protected isRoute(method: string, path: string): boolean {
    return method === 'POST' && ROUTE.test(path);
  }

  protected checkAuth(headers: IncomingHttpHeaders): { status: number; body: unknown } | undefined {
    const key = headers['xi-api-key'];
    if (key === this.options.apiKey) return undefined;
    return {
      status: 401,
      body: key
        ? { detail: { status: 'invalid_api_key', message: 'Invalid API key' } }
        : { detail: { status: 'needs_authorization', message: 'Neither authorization header nor xi-api-key received, please provide one.' } },
    };
  }

  protected errorBody(status: number, message: string): unknown {
    const kind = status === 429 ? 'too_many_concurrent_requests' : status >= 500 ? 'internal_server_error' : 'invalid_request';
    return { detail: { status: kind, message } };
  }

  protected answer(request: FakeSpeechServerRequest): FakeSpeechAnswer {
    const body = request.body;
    if (!body || typeof body['text'] !== 'string') {
      // FastAPI's validation answer, as ElevenLabs gives it.
      return { status: 422, body: { detail: [{ loc: ['body', 'text'], msg: 'field required', type: 'value_error.missing' }] } };
    }
    const format = request.query['output_format'] ?? 'mp3_44100_128';
    const match = PCM_FORMAT.exec(format);
    if (!match) {
      return { status: 400, body: this.errorBody(400, `FakeElevenLabsServer implements only pcm_* output formats, not ${format}`) };
    }
    const sampleRate = Number(match[1]);
    return { audio: { pcm: this.speech(body['text'], sampleRate), sampleRate, contentType: 'audio/pcm' } };
  }
}
