import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError, toFile } from 'openai';
import { concatPcm16, encodeWav } from '@parley/audio';
import { SpeechError } from './speech-error';
import { SpeechToText, SttOptions, SttStream, SttStreamHandlers } from './speech-to-text';

export interface OpenAiSpeechToTextOptions {
  /** Provider name as deployments name it. Default `openai`. */
  name?: string;
  /** Base URL up to and including the version segment. Default `https://api.openai.com/v1`. */
  baseURL?: string;
  /** Sent as `Authorization: Bearer …`. Omit for servers that need none. */
  apiKey?: string;
  /** Model when the agent names none. Default `gpt-4o-mini-transcribe`. */
  model?: string;
  /** Deadline of one transcription request. Default 10 s. */
  timeoutMs?: number;
  /** Retries of connection errors, 408/409/429 and 5xx. Default 0: a caller is waiting, the engine falls back. */
  maxRetries?: number;
}

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';
const DEFAULT_MODEL = 'gpt-4o-mini-transcribe';
// The SDK refuses to start without some credential; with no key we hand it this and strip the header it makes.
const NO_KEY = 'no-key';

/**
 * Request/response transcription over OpenAI's `POST /v1/audio/transcriptions` (OpenAI itself or a compatible
 * server), on the official `openai` SDK. A stream buffers the PCM written since the last `finalize()`; `finalize()`
 * sends it as a WAV and reports one `final` with `endOfTurn` (an empty one, without a request, when no audio came).
 * Answers are reported in the order of the finalizes. Configuration is explicit (no `OPENAI_*` environment).
 */
export class OpenAiSpeechToText implements SpeechToText {
  readonly name: string;
  private readonly client: OpenAI;
  private readonly model: string;

  constructor(options: OpenAiSpeechToTextOptions = {}) {
    this.name = options.name ?? 'openai';
    this.model = options.model ?? DEFAULT_MODEL;
    const apiKey = options.apiKey ? options.apiKey : undefined;
    this.client = new OpenAI({
      baseURL: options.baseURL ?? DEFAULT_BASE_URL,
      apiKey: apiKey ?? NO_KEY,
      adminAPIKey: null,
      organization: null,
      project: null,
      timeout: options.timeoutMs ?? 10_000,
      maxRetries: options.maxRetries ?? 0,
      // A null header removes the one the SDK would otherwise send.
      ...(apiKey === undefined ? { defaultHeaders: { Authorization: null } } : {}),
      fetch: fetchWithLocalErrors,
    });
  }

  async open(options: SttOptions, handlers: SttStreamHandlers): Promise<SttStream> {
    return new OpenAiStream((pcm, signal) => this.transcribe(pcm, options, signal), handlers);
  }

  private async transcribe(pcm: Int16Array, options: SttOptions, signal: AbortSignal): Promise<string> {
    const model = options.model ?? this.model;
    const language = primaryLanguage(options.language);
    let text: unknown;
    try {
      const file = await toFile(encodeWav(pcm, options.sampleRate), 'audio.wav', { type: 'audio/wav' });
      const result = await this.client.audio.transcriptions.create(
        { file, model, response_format: 'json', ...(language ? { language } : {}) },
        { signal },
      );
      text = result?.text;
    } catch (error) {
      throw this.toSpeechError(error, model, signal);
    }
    if (typeof text !== 'string') {
      throw new SpeechError(`${this.name} (model ${model}): the answer carried no text`, {
        code: 'invalid_response',
        provider: this.name,
      });
    }
    return text.trim();
  }

  private toSpeechError(error: unknown, model: string, signal: AbortSignal): SpeechError {
    if (error instanceof SpeechError) return error;
    const where = `${this.name} (model ${model})`;
    const base = { provider: this.name, cause: error };
    if (error instanceof APIUserAbortError || signal.aborted) {
      return new SpeechError(`${where}: request aborted`, { code: 'aborted', ...base });
    }
    if (error instanceof APIConnectionTimeoutError) {
      return new SpeechError(`${where}: no answer in time`, { code: 'timeout', ...base });
    }
    if (error instanceof APIConnectionError) {
      return new SpeechError(`${where}: connection failed: ${error.message}`, { code: 'connection', ...base });
    }
    if (error instanceof APIError && error.status !== undefined) {
      return new SpeechError(`${where}: provider answered ${error.message}`, { code: 'http', status: error.status, ...base });
    }
    const message = error instanceof Error ? error.message : String(error);
    return new SpeechError(`${where}: ${message}`, { code: 'invalid_response', ...base });
  }
}

class OpenAiStream implements SttStream {
  private chunks: Int16Array[] = [];
  private samples = 0;
  private closed = false;
  private readonly abort = new AbortController();
  /** Finalizes answer in order: each transcription reports after the one before it. */
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly transcribe: (pcm: Int16Array, signal: AbortSignal) => Promise<string>,
    private readonly handlers: SttStreamHandlers,
  ) {}

  write(pcm: Int16Array): void {
    if (this.closed || pcm.length === 0) return;
    this.chunks.push(pcm.slice());
    this.samples += pcm.length;
  }

  finalize(): void {
    if (this.closed) return;
    const audio = concatPcm16(this.chunks, this.samples);
    this.chunks = [];
    this.samples = 0;
    const request = audio.length > 0 ? this.transcribe(audio, this.abort.signal) : Promise.resolve('');
    // Keep the rejection handled until its turn comes.
    request.catch(() => undefined);
    this.queue = this.queue.then(async () => {
      try {
        const text = await request;
        if (!this.closed) this.handlers.onTranscript({ type: 'final', text, endOfTurn: true });
      } catch (error) {
        if (this.closed) return;
        // The stream is unusable for this turn; report and close, as the interface says.
        this.closed = true;
        this.abort.abort();
        this.handlers.onError(error as SpeechError);
      }
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.chunks = [];
    this.abort.abort();
  }
}

/** `en-US` → `en`: transcription APIs take ISO 639-1. */
function primaryLanguage(tag: string): string | undefined {
  const primary = tag.split(/[-_]/)[0]?.trim().toLowerCase();
  return primary && primary !== 'und' && primary !== 'mul' ? primary : undefined;
}

/**
 * `fetch`, with its failures re-thrown as Errors of this realm. The SDK tells a timeout from other connection
 * failures by `instanceof Error` and the name `AbortError`; fetch's DOMException comes from Node's own realm, which
 * is not this one under a sandbox such as Jest's, and would then be reported as a plain connection error.
 */
async function fetchWithLocalErrors(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(input, init);
  } catch (error) {
    if (error instanceof Error || typeof error !== 'object' || error === null) throw error;
    const { name, message } = error as { name?: unknown; message?: unknown };
    const local = new Error(typeof message === 'string' ? message : String(error), { cause: error });
    if (typeof name === 'string') local.name = name;
    throw local;
  }
}
