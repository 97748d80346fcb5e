import OpenAI, { APIConnectionTimeoutError, APIError } from 'openai';
import { SpeechError } from './speech-error';
import { SpeechChunk, SynthesisRequest, TextToSpeech } from './text-to-speech';
import { clamp, streamedSynthesis } from './tts-http-stream';

export interface OpenAiTextToSpeechOptions {
  apiKey: string;
  /** Base URL including the version segment. Default `https://api.openai.com/v1`. */
  baseUrl?: string;
  /** Default `gpt-4o-mini-tts`. */
  model?: string;
  /** Voice for requests naming none. Default `alloy`. */
  defaultVoice?: string;
  /** Longest wait for the answer, and then between two pieces of audio. Default 10 s. */
  timeoutMs?: number;
  /** Retries of connection errors, 408/409/429 and 5xx answers. Default 0: the engine's fallback is faster. */
  maxRetries?: number;
}

/** `response_format: pcm` is always 24 kHz, 16-bit signed little-endian, mono. */
export const OPENAI_TTS_SAMPLE_RATE = 24000;
const DEFAULT_MODEL = 'gpt-4o-mini-tts';
const DEFAULT_VOICE = 'alloy';
const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * TextToSpeech over OpenAI's `POST /v1/audio/speech` with `response_format: pcm`, on the official `openai` SDK;
 * the body is read as it streams in. Speed (0.25-4) is passed through; OpenAI has no pitch control, and the
 * language follows the text.
 */
export class OpenAiTextToSpeech implements TextToSpeech {
  readonly name = 'openai';
  private readonly client: OpenAI;
  private readonly model: string;
  private readonly defaultVoice: string;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;

  constructor(options: OpenAiTextToSpeechOptions) {
    this.model = options.model ?? DEFAULT_MODEL;
    this.defaultVoice = options.defaultVoice ?? DEFAULT_VOICE;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxRetries = options.maxRetries ?? 0;
    // Configuration is explicit: the SDK's OPENAI_* environment defaults are not consulted.
    this.client = new OpenAI({
      apiKey: options.apiKey,
      baseURL: options.baseUrl ?? 'https://api.openai.com/v1',
      adminAPIKey: null,
      organization: null,
      project: null,
      // Our deadline fires first; the SDK's (it only covers the wait for the headers) is a backstop.
      timeout: this.timeoutMs + 1000,
      maxRetries: this.maxRetries,
    });
  }

  synthesize(request: SynthesisRequest): AsyncIterable<SpeechChunk> {
    return this.run(request);
  }

  private run(request: SynthesisRequest): AsyncGenerator<SpeechChunk> {
    return streamedSynthesis({
      provider: this.name,
      request,
      timeoutMs: this.timeoutMs,
      sampleRate: OPENAI_TTS_SAMPLE_RATE,
      open: async (signal) => {
        const response = await this.client.audio.speech.create(
          {
            model: request.model || this.model,
            voice: request.voiceId || this.defaultVoice,
            input: request.text,
            response_format: 'pcm',
            ...(request.speed !== undefined ? { speed: clamp(request.speed, 0.25, 4) } : {}),
          },
          { signal, maxRetries: this.maxRetries },
        );
        if (!response.body) throw new SpeechError(`${this.name}: the answer carried no audio`, { code: 'invalid_response', provider: this.name });
        return response.body;
      },
      classify: (error) => {
        if (error instanceof APIConnectionTimeoutError) return { kind: 'timeout' };
        if (error instanceof APIError && error.status !== undefined) return { kind: 'http', status: error.status, message: `provider answered ${error.message}` };
        return undefined;
      },
    });
  }
}
