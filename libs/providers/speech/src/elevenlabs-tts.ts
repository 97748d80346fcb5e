import type { ElevenLabs, ElevenLabsClient } from '@elevenlabs/elevenlabs-js';
import { SpeechChunk, SynthesisRequest, TextToSpeech } from './text-to-speech';
import { clamp, streamedSynthesis } from './tts-http-stream';

type Sdk = typeof import('@elevenlabs/elevenlabs-js');

/**
 * The SDK is loaded when an ElevenLabs voice is configured, not by every process that links this library: it holds
 * about 50 MB of heap (more than the rest of a media worker's live heap) and takes about 2 s to load, and each of
 * the worker's major GCs marks all of it while its calls wait (docs/engine.md).
 */
const loadSdk = () => Promise.all([import('@elevenlabs/elevenlabs-js'), import('@elevenlabs/elevenlabs-js/core')]);

/** The raw PCM rates ElevenLabs streams (`pcm_<rate>`; 44100 and up need a Pro plan). */
export type ElevenLabsPcmRate = 8000 | 16000 | 22050 | 24000 | 32000 | 44100 | 48000;

export interface ElevenLabsTextToSpeechOptions {
  apiKey: string;
  /** API origin, without `/v1`. Default `https://api.elevenlabs.io` (data-residency origins and fakes go here). */
  baseUrl?: string;
  /** Default `eleven_flash_v2_5` (ElevenLabs' lowest-latency model). */
  model?: string;
  /** Voice for requests naming none. Default `21m00Tcm4TlvDq8ikWAM` (the premade "Rachel"). */
  defaultVoiceId?: string;
  /** Longest wait for the answer, and then between two pieces of audio. Default 10 s. */
  timeoutMs?: number;
  /** Retries of 408/429/5xx answers. Default 0: in a live call the engine's fallback is faster than a backoff. */
  maxRetries?: number;
  /** PCM rate to ask for (every chunk states it). Default 16000. */
  sampleRate?: ElevenLabsPcmRate;
}

const DEFAULT_MODEL = 'eleven_flash_v2_5';
const DEFAULT_VOICE_ID = '21m00Tcm4TlvDq8ikWAM';
const DEFAULT_TIMEOUT_MS = 10_000;
/** ElevenLabs accepts voice_settings.speed only in this range; outside it the request fails, so we clamp. */
export const ELEVENLABS_MIN_SPEED = 0.7;
export const ELEVENLABS_MAX_SPEED = 1.2;

/**
 * TextToSpeech over ElevenLabs' streaming endpoint (`POST /v1/text-to-speech/{voice_id}/stream`, raw PCM), on the
 * official SDK. Audio is yielded as the bytes arrive. Speed is clamped to 0.7-1.2 (ElevenLabs' range); pitch is
 * not supported by ElevenLabs and is ignored.
 */
export class ElevenLabsTextToSpeech implements TextToSpeech {
  readonly name = 'elevenlabs';
  /** Rejects when the SDK cannot be loaded: each synthesis then fails with that reason. */
  private readonly client: Promise<ElevenLabsClient>;
  /** Its error classes, once loaded (an error is classified after `client` settled). */
  private sdk: Sdk | undefined;
  private readonly model: string;
  private readonly defaultVoiceId: string;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly sampleRate: ElevenLabsPcmRate;

  constructor(options: ElevenLabsTextToSpeechOptions) {
    this.model = options.model ?? DEFAULT_MODEL;
    this.defaultVoiceId = options.defaultVoiceId ?? DEFAULT_VOICE_ID;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxRetries = options.maxRetries ?? 0;
    this.sampleRate = options.sampleRate ?? 16000;
    this.client = loadSdk().then(([sdk, { fetcher }]) => {
      this.sdk = sdk;
      return new sdk.ElevenLabsClient({
        apiKey: options.apiKey,
        ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}),
        maxRetries: this.maxRetries,
        // The SDK's own timeout only covers the wait for the headers, and its timer is cleared only on success (an
        // aborted request would leave it holding the process for the whole timeout): our deadline does the job.
        fetcher: (args) => fetcher({ ...args, timeoutMs: undefined }),
      });
    });
    // Unused until the first synthesis, which awaits it and so reports a failed load; not an unhandled rejection.
    this.client.catch(() => undefined);
  }

  synthesize(request: SynthesisRequest): AsyncIterable<SpeechChunk> {
    return this.run(request);
  }

  private run(request: SynthesisRequest): AsyncGenerator<SpeechChunk> {
    const model = request.model || this.model;
    const body: ElevenLabs.StreamTextToSpeechRequest = {
      text: request.text,
      modelId: model,
      outputFormat: `pcm_${this.sampleRate}`,
      // language_code is documented for the v2.5 models (it steers text normalisation); older ones reject or ignore it.
      ...(/_v2_5$/.test(model) && request.language ? { languageCode: request.language.split('-')[0].toLowerCase() } : {}),
      // Sent only when asked for: a partial voice_settings could replace the voice's stored settings.
      ...(request.speed !== undefined && request.speed !== 1
        ? { voiceSettings: { speed: clamp(request.speed, ELEVENLABS_MIN_SPEED, ELEVENLABS_MAX_SPEED) } }
        : {}),
    };
    return streamedSynthesis({
      provider: this.name,
      request,
      timeoutMs: this.timeoutMs,
      sampleRate: this.sampleRate,
      open: async (signal) => (await this.client).textToSpeech.stream(request.voiceId || this.defaultVoiceId, body, { abortSignal: signal, maxRetries: this.maxRetries }),
      classify: (error) => {
        if (!this.sdk) return undefined;
        if (error instanceof this.sdk.ElevenLabsTimeoutError) return { kind: 'timeout' };
        if (error instanceof this.sdk.ElevenLabsError && error.statusCode !== undefined) {
          return { kind: 'http', status: error.statusCode, message: `HTTP ${error.statusCode}${describeBody(error.body)}` };
        }
        return undefined;
      },
    });
  }
}

/** ` (status: message)` from ElevenLabs' `{"detail": {"status", "message"}}` error body, when it has one. */
function describeBody(body: unknown): string {
  const detail = typeof body === 'object' && body !== null ? (body as { detail?: unknown }).detail : undefined;
  if (typeof detail === 'string') return ` (${detail})`;
  if (typeof detail === 'object' && detail !== null && !Array.isArray(detail)) {
    const { status, message } = detail as { status?: unknown; message?: unknown };
    if (typeof message === 'string') return typeof status === 'string' ? ` (${status}: ${message})` : ` (${message})`;
  }
  if (detail !== undefined) return ` (${JSON.stringify(detail)})`;
  return typeof body === 'string' && body ? ` (${body.slice(0, 200)})` : '';
}
