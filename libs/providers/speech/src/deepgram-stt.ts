import { DeepgramClient, listen } from '@deepgram/sdk';
import { concatPcm16, pcm16ToBytes } from '@parley/audio';
import { SpeechError, SpeechErrorCode } from './speech-error';
import { SpeechToText, SttEvent, SttOptions, SttStream, SttStreamHandlers } from './speech-to-text';

export interface DeepgramSpeechToTextOptions {
  apiKey: string;
  /**
   * Where the live endpoint is, without `/v1/listen`: default `wss://api.deepgram.com`; a self-hosted Deepgram or
   * a test server (`ws://127.0.0.1:40123`).
   */
  baseUrl?: string;
  /** Model when the agent names none. Default `nova-3`. */
  model?: string;
  /** Silence (ms) after which Deepgram marks speech final (`endpointing`). Default 300. */
  endpointingMs?: number;
  /** Word gap (ms) after which Deepgram sends UtteranceEnd (`utterance_end_ms`, at least 1000). Default 1000. */
  utteranceEndMs?: number;
  /** KeepAlive period while the stream is open. Default 5 s (Deepgram closes after 10 s without data). */
  keepAliveMs?: number;
  /** Deadline of the WebSocket handshake. Default 10 s. */
  connectTimeoutMs?: number;
  /** Wait for a final after `finalize()` before reporting an empty end of turn. Default 2 s. */
  finalizeTimeoutMs?: number;
}

type Socket = Awaited<ReturnType<DeepgramClient['listen']['v1']['connect']>>;
type ServerMessage = listen.ListenV1Results | listen.ListenV1UtteranceEnd | listen.ListenV1SpeechStarted | listen.ListenV1Metadata;

const PROVIDER = 'deepgram';
const DEFAULT_MODEL = 'nova-3';
/**
 * Audio goes to Deepgram in 50 ms messages (LiveKit's Deepgram plugin does the same), not one per 20 ms carrier
 * frame: a WebSocket message costs a masked copy and a write system call, and the recognizer gains nothing from
 * smaller ones. `finalize()` and `close()` send what is held first.
 */
const CHUNK_MS = 50;

/**
 * Deepgram live transcription (`/v1/listen` over WebSocket) on the official SDK: linear16 mono at the stream's
 * rate, interim results, endpointing and UtteranceEnd. `Results` become `partial` (interim) and `final` events
 * (`endOfTurn` = `speech_final`, or the first final after `finalize()`); an `UtteranceEnd` ends the turn with an
 * empty final only when settled words are still waiting for an end of turn (after a `speech_final` it would be a
 * second end of the same turn). The SDK's reconnection is off: a dropped stream is reported for the engine to
 * fall back or reopen, since resending audio to a new session would transcribe it twice.
 */
export class DeepgramSpeechToText implements SpeechToText {
  readonly name = PROVIDER;
  private readonly client: DeepgramClient;

  constructor(private readonly options: DeepgramSpeechToTextOptions) {
    this.client = new DeepgramClient({ apiKey: options.apiKey, ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}) });
  }

  async open(options: SttOptions, handlers: SttStreamHandlers): Promise<SttStream> {
    const model = options.model ?? this.options.model ?? DEFAULT_MODEL;
    let socket: Socket;
    try {
      socket = await this.client.listen.v1.connect({
        model,
        language: options.language,
        encoding: 'linear16',
        sample_rate: options.sampleRate,
        channels: 1,
        interim_results: 'true',
        punctuate: 'true',
        endpointing: this.options.endpointingMs ?? 300,
        utterance_end_ms: this.options.utteranceEndMs ?? 1000,
        reconnectAttempts: 0,
        shouldReconnect: () => false,
        connectionTimeoutInSeconds: (this.options.connectTimeoutMs ?? 10_000) / 1000,
      });
    } catch (error) {
      throw toSpeechError(error, 'cannot open a live stream');
    }
    const stream = new DeepgramStream(socket, handlers, (options.sampleRate * CHUNK_MS) / 1000, {
      keepAliveMs: this.options.keepAliveMs ?? 5000,
      finalizeTimeoutMs: this.options.finalizeTimeoutMs ?? 2000,
    });
    await stream.connect();
    return stream;
  }
}

class DeepgramStream implements SttStream {
  private state: 'connecting' | 'open' | 'closed' = 'connecting';
  private keepAlive: NodeJS.Timeout | undefined;
  private finalizeTimer: NodeJS.Timeout | undefined;
  /** A final with words was reported and no end of turn yet. */
  private wordsPending = false;
  /** `finalize()` was called and its final has not come. */
  private finalizing = false;
  private lastError: Error | undefined;
  private failureScheduled = false;
  private settleOpen: ((error?: SpeechError) => void) | undefined;
  /** Audio written and not yet sent (fewer than chunkSamples samples). */
  private held: Int16Array[] = [];
  private heldSamples = 0;

  constructor(
    private readonly socket: Socket,
    private readonly handlers: SttStreamHandlers,
    private readonly chunkSamples: number,
    private readonly timing: { keepAliveMs: number; finalizeTimeoutMs: number },
  ) {}

  /** Opens the socket; rejects with a SpeechError if the handshake fails. */
  connect(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.settleOpen = (error) => {
        this.settleOpen = undefined;
        if (error) reject(error);
        else resolve();
      };
      this.socket.on('open', () => this.onOpen());
      this.socket.on('message', (message) => this.onMessage(message as ServerMessage));
      this.socket.on('error', (error) => this.onSocketTrouble(error));
      this.socket.on('close', (event) => this.onSocketTrouble(undefined, event));
      this.socket.connect();
    });
  }

  write(pcm: Int16Array): void {
    if (this.state !== 'open' || pcm.length === 0) return;
    this.held.push(pcm);
    this.heldSamples += pcm.length;
    if (this.heldSamples >= this.chunkSamples) this.sendHeld();
  }

  private sendHeld(): void {
    if (!this.heldSamples) return;
    const chunk = concatPcm16(this.held, this.heldSamples);
    this.held = [];
    this.heldSamples = 0;
    this.send(() => this.socket.sendMedia(pcm16ToBytes(chunk)));
  }

  finalize(): void {
    if (this.state !== 'open') return;
    this.sendHeld();
    this.finalizing = true;
    this.send(() => this.socket.sendFinalize({ type: 'Finalize' }));
    // Deepgram may not answer a Finalize when it holds no audio; the engine still needs its end of turn.
    clearTimeout(this.finalizeTimer);
    this.finalizeTimer = setTimeout(() => {
      if (this.state === 'open' && this.finalizing) this.endTurn('', undefined);
    }, this.timing.finalizeTimeoutMs);
    this.finalizeTimer.unref();
  }

  async close(): Promise<void> {
    if (this.state === 'closed') return;
    const wasOpen = this.state === 'open';
    if (wasOpen) this.sendHeld();
    this.shutDown();
    if (wasOpen) this.send(() => this.socket.sendCloseStream({ type: 'CloseStream' }));
    this.socket.close();
  }

  private onOpen(): void {
    if (this.state !== 'connecting') return;
    this.state = 'open';
    this.keepAlive = setInterval(() => this.send(() => this.socket.sendKeepAlive({ type: 'KeepAlive' })), this.timing.keepAliveMs);
    this.keepAlive.unref();
    this.settleOpen?.();
  }

  private onMessage(message: ServerMessage): void {
    if (this.state !== 'open' || typeof message !== 'object' || message === null) return;
    if (message.type === 'Results') {
      const alternative = message.channel?.alternatives?.[0];
      const text = typeof alternative?.transcript === 'string' ? alternative.transcript.trim() : '';
      if (!message.is_final) {
        if (text) this.deliver({ type: 'partial', text });
        return;
      }
      const language = alternative?.languages?.[0];
      if (message.speech_final || this.finalizing) {
        // An empty end of turn only closes a turn that has words (or one the engine asked to settle).
        if (text || this.wordsPending || this.finalizing) this.endTurn(text, language);
      } else if (text) {
        this.wordsPending = true;
        this.deliver({ type: 'final', text, endOfTurn: false, ...(language ? { language } : {}) });
      }
    } else if (message.type === 'UtteranceEnd') {
      if (this.wordsPending) this.endTurn('', undefined);
    }
    // SpeechStarted and Metadata carry nothing the engine uses.
  }

  private endTurn(text: string, language: string | undefined): void {
    this.wordsPending = false;
    this.finalizing = false;
    clearTimeout(this.finalizeTimer);
    this.deliver({ type: 'final', text, endOfTurn: true, ...(language ? { language } : {}) });
  }

  /**
   * An error or a close we did not ask for. The SDK reports a failed socket as a close (code 1000) followed by the
   * error, so the report waits a tick for the error's detail.
   */
  private onSocketTrouble(error: Error | undefined, event?: { code?: number; reason?: string }): void {
    if (this.state === 'closed') return;
    if (error) this.lastError = error;
    if (this.failureScheduled) return;
    this.failureScheduled = true;
    setImmediate(() => {
      if (this.state === 'closed') return;
      const opening = this.state === 'connecting';
      const failure = this.lastError
        ? toSpeechError(this.lastError, opening ? 'cannot open a live stream' : 'live stream failed')
        : new SpeechError(
            `${PROVIDER}: live stream closed unexpectedly (code ${event?.code ?? 'unknown'}${event?.reason ? `: ${event.reason}` : ''})`,
            { code: 'connection', provider: PROVIDER },
          );
      this.shutDown();
      this.socket.close();
      if (opening) this.settleOpen?.(failure);
      else this.handlers.onError(failure);
    });
  }

  private shutDown(): void {
    this.state = 'closed';
    clearInterval(this.keepAlive);
    clearTimeout(this.finalizeTimer);
  }

  private deliver(event: SttEvent): void {
    if (this.state === 'open') this.handlers.onTranscript(event);
  }

  /** The SDK throws when the socket is no longer open; the close event reports that. */
  private send(action: () => void): void {
    try {
      action();
    } catch {
      // Reported by the close/error handlers.
    }
  }
}

function toSpeechError(error: unknown, what: string): SpeechError {
  if (error instanceof SpeechError) return error;
  const message = error instanceof Error ? error.message : String(error);
  // The `ws` library rejects a refused upgrade with "Unexpected server response: <status>".
  const status = /Unexpected server response: (\d{3})/.exec(message)?.[1];
  let code: SpeechErrorCode = 'connection';
  if (status) code = 'http';
  else if (message === 'TIMEOUT') code = 'timeout';
  return new SpeechError(`${PROVIDER}: ${what}: ${message}`, {
    code,
    provider: PROVIDER,
    ...(status ? { status: Number(status) } : {}),
    cause: error,
  });
}
