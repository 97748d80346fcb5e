import { pcm16FromBytes } from '@parley/audio';
import { SpeechError } from './speech-error';
import { SpeechChunk, SynthesisRequest } from './text-to-speech';

/**
 * The life of one streamed synthesis request: one AbortController for the vendor SDK that fires when the caller's
 * signal does, or when nothing has arrived for `timeoutMs` (before the headers and then between body pieces; the
 * SDKs' own timeouts stop counting once the headers are in, which would let a stalled stream hang a call).
 */
class SynthesisDeadline {
  private readonly controller = new AbortController();
  private readonly stopped: Promise<never>;
  private timer: NodeJS.Timeout | undefined;
  private reason: 'aborted' | 'timeout' | undefined;
  private readonly onCallerAbort = () => this.stop('aborted');

  constructor(
    private readonly caller: AbortSignal,
    private readonly timeoutMs: number,
  ) {
    this.stopped = new Promise<never>((_, reject) => {
      this.controller.signal.addEventListener('abort', () => reject(new Error(`synthesis ${this.reason ?? 'ended'}`)), {
        once: true,
      });
    });
    // Nobody may be racing at the moment it fires.
    this.stopped.catch(() => undefined);
    if (caller.aborted) this.stop('aborted');
    else {
      caller.addEventListener('abort', this.onCallerAbort, { once: true });
      this.touch();
    }
  }

  /** For the SDK: fires on the caller's abort, on inactivity, and at `dispose()`. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Restarts the inactivity timer (on every piece of progress). */
  touch(): void {
    if (this.reason) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.stop('timeout'), this.timeoutMs);
  }

  /** `promise`'s outcome, or a rejection the moment the request is aborted or times out. */
  race<T>(promise: Promise<T>): Promise<T> {
    // Checked first: buffered data would otherwise win the race against an abort that has already happened.
    if (this.controller.signal.aborted) {
      promise.catch(() => undefined);
      return this.stopped;
    }
    return Promise.race([promise, this.stopped]);
  }

  /** The SpeechError for a failure caused by the deadline (aborted or timed out), else undefined. */
  failure(provider: string, cause: unknown): SpeechError | undefined {
    if (this.reason === 'aborted' || this.caller.aborted) {
      return new SpeechError(`${provider}: synthesis aborted`, { code: 'aborted', provider, cause });
    }
    if (this.reason === 'timeout') {
      return new SpeechError(`${provider}: no audio for ${this.timeoutMs} ms`, { code: 'timeout', provider, cause });
    }
    return undefined;
  }

  /**
   * Stops the timer and ends the request unless its body was read to the end (`complete`): then the connection is
   * back in the client's pool for the next synthesis, and an abort would close it (a TCP and TLS handshake more on
   * the next answer) and cost an AbortError with its stack.
   */
  dispose(complete: boolean): void {
    clearTimeout(this.timer);
    this.caller.removeEventListener('abort', this.onCallerAbort);
    if (!complete && !this.controller.signal.aborted) this.controller.abort();
  }

  private stop(reason: 'aborted' | 'timeout'): void {
    if (this.reason) return;
    this.reason = reason;
    clearTimeout(this.timer);
    this.controller.abort();
  }
}

/**
 * Yields a streamed body of raw PCM16 little-endian mono as chunks, as the bytes arrive. A network read can end
 * mid-sample, so an odd trailing byte waits for the next piece. Stops at once when the deadline fires, and cancels
 * the body (closing the connection) however the iteration ends early.
 */
async function* pcm16Chunks(
  body: ReadableStream<Uint8Array>,
  sampleRate: number,
  deadline: SynthesisDeadline,
  toError: (error: unknown) => SpeechError,
): AsyncGenerator<SpeechChunk> {
  const reader = body.getReader();
  let finished = false;
  let carry: Buffer | undefined;
  try {
    for (;;) {
      let result: Awaited<ReturnType<typeof reader.read>>;
      try {
        result = await deadline.race(reader.read());
      } catch (error) {
        throw toError(error);
      }
      if (result.done) {
        finished = true;
        // A lone trailing byte is half a sample: nothing audible to lose.
        return;
      }
      deadline.touch();
      let bytes = Buffer.from(result.value.buffer, result.value.byteOffset, result.value.byteLength);
      if (carry) {
        bytes = Buffer.concat([carry, bytes]);
        carry = undefined;
      }
      if (bytes.length % 2 !== 0) {
        carry = Buffer.from(bytes.subarray(bytes.length - 1));
        bytes = bytes.subarray(0, bytes.length - 1);
      }
      if (bytes.length > 0) yield { pcm: pcm16FromBytes(bytes), sampleRate };
    }
  } finally {
    if (!finished) reader.cancel().catch(() => undefined);
  }
}

/** How a vendor's SDK error reads: a timeout of its own, or an HTTP answer (message without the provider name). */
export type VendorFailure = { kind: 'timeout' } | { kind: 'http'; status: number; message: string } | undefined;

export interface StreamedSynthesis {
  provider: string;
  request: SynthesisRequest;
  timeoutMs: number;
  sampleRate: number;
  /** Sends the request through the vendor SDK (aborted by `signal`) and resolves with the audio body. */
  open(signal: AbortSignal): Promise<ReadableStream<Uint8Array>>;
  /** Recognises the SDK's own error classes; anything else counts as a failed connection. */
  classify(error: unknown): VendorFailure;
}

/**
 * One synthesis over a vendor's streaming HTTP API, the part every vendor shares: the deadline and the caller's
 * abort, nothing sent for blank text, the body cut into PCM16 chunks as it arrives, and every failure turned into
 * a SpeechError (`aborted`, `timeout`, `http` with the status, or `connection`).
 */
export async function* streamedSynthesis(s: StreamedSynthesis): AsyncGenerator<SpeechChunk> {
  const deadline = new SynthesisDeadline(s.request.signal, s.timeoutMs);
  const toError = (error: unknown): SpeechError => {
    if (error instanceof SpeechError) return error;
    const ours = deadline.failure(s.provider, error);
    if (ours) return ours;
    const failure = s.classify(error);
    if (failure?.kind === 'timeout') return new SpeechError(`${s.provider}: no answer in time`, { code: 'timeout', provider: s.provider, cause: error });
    if (failure?.kind === 'http') {
      return new SpeechError(`${s.provider}: ${failure.message}`, { code: 'http', provider: s.provider, status: failure.status, cause: error });
    }
    const message = error instanceof Error ? error.message : String(error);
    return new SpeechError(`${s.provider}: connection failed: ${message}`, { code: 'connection', provider: s.provider, cause: error });
  };
  let complete = false;
  try {
    const aborted = deadline.failure(s.provider, undefined);
    if (aborted) throw aborted;
    // Nothing to say: vendors answer blank text with an error.
    if (!s.request.text.trim()) return;
    let body: ReadableStream<Uint8Array>;
    try {
      body = await deadline.race(s.open(deadline.signal));
    } catch (error) {
      throw toError(error);
    }
    deadline.touch();
    yield* pcm16Chunks(body, s.sampleRate, deadline, toError);
    complete = true;
  } finally {
    deadline.dispose(complete);
  }
}

export function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}
