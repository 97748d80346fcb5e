import { SpeechError } from './speech-error';
import { SpeechToText, SttEvent, SttOptions, SttStream, SttStreamHandlers } from './speech-to-text';

export interface EnergySpeechDetectorOptions {
  /** RMS (of full scale 32768) at or above which a 10 ms window counts as speech. Default 500 (about −36 dBFS). */
  threshold?: number;
  /** Loud time that makes a speech segment. Default 100 ms. */
  minSpeechMs?: number;
  /** Quiet time after speech that ends the segment. Default 300 ms. */
  minSilenceMs?: number;
}

/** A stretch of speech found by {@link EnergySpeechDetector}, in ms from the first sample pushed. */
export interface SpeechSegment {
  startMs: number;
  endMs: number;
}

const WINDOW_MS = 10;

/**
 * A crude energy VAD for fakes (not for production): speech is ≥ `minSpeechMs` of 10 ms windows with RMS above
 * the threshold, and ends after ≥ `minSilenceMs` of windows below it. Enough to script "a tone burst is an
 * utterance" the way a streaming vendor's endpointing would report it.
 */
export class EnergySpeechDetector {
  private readonly threshold: number;
  private readonly minSpeechMs: number;
  private readonly minSilenceMs: number;
  private readonly windowSamples: number;
  private carry: number[] = [];
  private elapsedMs = 0;
  private loudMs = 0;
  private quietMs = 0;
  private startMs: number | undefined;

  constructor(sampleRate: number, options: EnergySpeechDetectorOptions = {}) {
    this.threshold = options.threshold ?? 500;
    this.minSpeechMs = options.minSpeechMs ?? 100;
    this.minSilenceMs = options.minSilenceMs ?? 300;
    this.windowSamples = Math.max(1, Math.round((sampleRate * WINDOW_MS) / 1000));
  }

  /** True while inside a speech segment (its start reported, its end not yet). */
  get inSpeech(): boolean {
    return this.startMs !== undefined;
  }

  /** Audio time consumed so far, in ms (whole 10 ms windows). */
  get timeMs(): number {
    return this.elapsedMs;
  }

  /** Feeds samples; returns the segments that ended within them, and calls `onStart` as segments begin. */
  push(samples: Int16Array, onStart?: (startMs: number) => void): SpeechSegment[] {
    const ended: SpeechSegment[] = [];
    let window = this.carry;
    for (let i = 0; i < samples.length; i++) {
      window.push(samples[i]);
      if (window.length < this.windowSamples) continue;
      const loud = rms(window) >= this.threshold;
      window = [];
      this.elapsedMs += WINDOW_MS;
      if (this.startMs === undefined) {
        this.loudMs = loud ? this.loudMs + WINDOW_MS : 0;
        if (this.loudMs >= this.minSpeechMs) {
          this.startMs = this.elapsedMs - this.loudMs;
          this.quietMs = 0;
          onStart?.(this.startMs);
        }
      } else {
        this.quietMs = loud ? 0 : this.quietMs + WINDOW_MS;
        if (this.quietMs >= this.minSilenceMs) {
          ended.push({ startMs: this.startMs, endMs: this.elapsedMs - this.quietMs });
          this.startMs = undefined;
          this.loudMs = 0;
        }
      }
    }
    this.carry = window;
    return ended;
  }

  /** Ends the segment in progress now (a Finalize), if there is one. */
  flush(): SpeechSegment | undefined {
    if (this.startMs === undefined) return undefined;
    const segment = { startMs: this.startMs, endMs: this.elapsedMs - this.quietMs };
    this.startMs = undefined;
    this.loudMs = 0;
    this.quietMs = 0;
    return segment;
  }
}

function rms(window: number[]): number {
  let sum = 0;
  for (const s of window) sum += s * s;
  return Math.sqrt(sum / window.length);
}

export interface FakeSpeechToTextOptions {
  /** Default `fake-stt`. */
  name?: string;
  /**
   * Detect utterances in the written audio by energy and emit the next queued text as a final `endOfTurn` on its
   * own, as a streaming vendor with endpointing would. `true` for the default thresholds.
   */
  autoDetect?: boolean | EnergySpeechDetectorOptions;
  /** Keep a copy of every frame written (default true); long benchmarks turn it off to hold memory flat. */
  keepFrames?: boolean;
}

/** What the fake knows of one stream it opened. */
export interface FakeSttStreamRecord {
  options: SttOptions;
  /** Every frame written, as written (copies). */
  frames: Int16Array[];
  /** Total samples written. */
  samples: number;
  finalizeCount: number;
  /** Closed by the engine, or failed. */
  closed: boolean;
  /** Every event delivered to the stream's handlers, in order. */
  events: SttEvent[];
}

/**
 * In-memory SpeechToText for engine unit tests. Each `finalize()` answers (asynchronously, like a vendor) the next
 * queued text as a final `endOfTurn` (an empty one once the queue is used up); `emit()` pushes any event at once;
 * failures are scripted with `failNextOpen()` and `failStream()`. Nothing is delivered after `close()`.
 */
export class FakeSpeechToText implements SpeechToText {
  readonly name: string;
  /** Every stream opened, in order. */
  readonly streams: FakeSttStreamRecord[] = [];
  private readonly texts: string[] = [];
  private readonly detectorOptions: EnergySpeechDetectorOptions | undefined;
  private readonly keepFrames: boolean;
  private nextOpenError: Error | undefined;
  private live: FakeStream | undefined;

  constructor(options: FakeSpeechToTextOptions = {}) {
    this.name = options.name ?? 'fake-stt';
    const auto = options.autoDetect;
    this.detectorOptions = auto === true ? {} : auto || undefined;
    this.keepFrames = options.keepFrames ?? true;
  }

  /** Appends texts, answered one per finalized (or auto-detected) utterance. */
  queue(...texts: string[]): this {
    this.texts.push(...texts);
    return this;
  }

  /** Queued texts not answered yet. */
  get pending(): number {
    return this.texts.length;
  }

  /** The latest stream opened (open or not). */
  get current(): FakeSttStreamRecord | undefined {
    return this.streams[this.streams.length - 1];
  }

  /** Makes the next `open()` reject with `error` (default: a `connection` SpeechError). */
  failNextOpen(error?: Error): this {
    this.nextOpenError = error ?? new SpeechError(`${this.name}: connection refused`, { code: 'connection', provider: this.name });
    return this;
  }

  /** Pushes an event to the current open stream at once. */
  emit(event: SttEvent): void {
    this.openStream('emit').deliver(event);
  }

  /** Fails the current open stream: its `onError` gets `error` (default: a `connection` SpeechError) and it closes. */
  failStream(error?: SpeechError): void {
    this.openStream('failStream').fail(error ?? new SpeechError(`${this.name}: connection lost`, { code: 'connection', provider: this.name }));
  }

  async open(options: SttOptions, handlers: SttStreamHandlers): Promise<SttStream> {
    const error = this.nextOpenError;
    if (error) {
      this.nextOpenError = undefined;
      throw error;
    }
    const record: FakeSttStreamRecord = { options: { ...options }, frames: [], samples: 0, finalizeCount: 0, closed: false, events: [] };
    this.streams.push(record);
    const detector = this.detectorOptions ? new EnergySpeechDetector(options.sampleRate, this.detectorOptions) : undefined;
    const stream = new FakeStream(record, handlers, detector, () => this.texts.shift() ?? '', this.keepFrames);
    this.live = stream;
    return stream;
  }

  private openStream(what: string): FakeStream {
    if (!this.live || this.live.record.closed) throw new Error(`FakeSpeechToText.${what}: no open stream`);
    return this.live;
  }
}

class FakeStream implements SttStream {
  constructor(
    readonly record: FakeSttStreamRecord,
    private readonly handlers: SttStreamHandlers,
    private readonly detector: EnergySpeechDetector | undefined,
    private readonly nextText: () => string,
    private readonly keepFrames: boolean,
  ) {}

  write(pcm: Int16Array): void {
    if (this.record.closed) return;
    if (this.keepFrames) this.record.frames.push(pcm.slice());
    this.record.samples += pcm.length;
    for (const _segment of this.detector?.push(pcm) ?? []) this.endOfTurn();
  }

  finalize(): void {
    if (this.record.closed) return;
    this.record.finalizeCount++;
    this.detector?.flush();
    // A vendor answers later, never inside the call.
    queueMicrotask(() => this.endOfTurn());
  }

  async close(): Promise<void> {
    this.record.closed = true;
  }

  deliver(event: SttEvent): void {
    if (this.record.closed) return;
    this.record.events.push(event);
    this.handlers.onTranscript(event);
  }

  fail(error: SpeechError): void {
    if (this.record.closed) return;
    this.record.closed = true;
    this.handlers.onError(error);
  }

  private endOfTurn(): void {
    if (this.record.closed) return;
    this.deliver({ type: 'final', text: this.nextText(), endOfTurn: true });
  }
}
