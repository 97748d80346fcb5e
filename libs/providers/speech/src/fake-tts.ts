import { SpeechError } from './speech-error';
import { SpeechChunk, SynthesisRequest, TextToSpeech } from './text-to-speech';

export const FAKE_TTS_MS_PER_CHAR = 50;
const AMPLITUDE = 8000;

/** The tone frequency (Hz, 300-799) the fakes use for `text`: a test can tell from the audio which sentence played. */
export function fakeToneFrequency(text: string): number {
  // FNV-1a: stable across runs and platforms.
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return 300 + (hash % 500);
}

/** The fakes' audio for `text`: a sine at {@link fakeToneFrequency}, `msPerChar * text.length` long. */
export function fakeSpeechPcm(text: string, sampleRate: number, msPerChar: number = FAKE_TTS_MS_PER_CHAR): Int16Array {
  const tone = new FakeTone(fakeToneFrequency(text), sampleRate);
  return tone.next(Math.round((msPerChar * text.length * sampleRate) / 1000));
}

/**
 * A sine produced piece by piece with the rotation recurrence (no Math.sin per sample), so a fake voice costs
 * little CPU and never blocks the event loop for a whole sentence: benchmarks measure the engine, not the fake.
 */
class FakeTone {
  private readonly k: number;
  private prev: number;
  private current = 0;

  constructor(frequency: number, sampleRate: number) {
    const step = (2 * Math.PI * frequency) / sampleRate;
    this.k = 2 * Math.cos(step);
    this.prev = -Math.sin(step);
  }

  next(count: number): Int16Array {
    const out = new Int16Array(count);
    for (let i = 0; i < count; i++) {
      out[i] = Math.round(AMPLITUDE * this.current);
      const following = this.k * this.current - this.prev;
      this.prev = this.current;
      this.current = following;
    }
    return out;
  }
}

export interface FakeTextToSpeechOptions {
  /** Default `fake-tts`. */
  name?: string;
  /** Default 16000. */
  sampleRate?: number;
  /** Audio length per character of text. Default 50 ms. */
  msPerChar?: number;
  /** Audio per chunk. Default 100 ms. */
  chunkMs?: number;
  /** Wait before the first chunk (the vendor's time to first byte). Default 0. */
  firstChunkDelayMs?: number;
  /** Wait between later chunks: 0 (default) = as fast as the consumer pulls; `chunkMs` = real time. */
  chunkIntervalMs?: number;
}

/** How one synthesis went: `abandoned` = the consumer stopped iterating before the end without aborting. */
export type FakeSynthesisOutcome = 'streaming' | 'completed' | 'aborted' | 'failed' | 'abandoned';

export interface FakeSynthesis {
  request: SynthesisRequest;
  /** Chunks handed to the consumer so far. */
  chunks: number;
  outcome: FakeSynthesisOutcome;
}

/**
 * A TextToSpeech for engine tests: deterministic tone audio (see {@link fakeSpeechPcm}) in fixed-size chunks, with
 * configurable time to first chunk and pacing; records every request and how it ended; scripted failures.
 */
export class FakeTextToSpeech implements TextToSpeech {
  readonly name: string;
  /** Every synthesis, in order of the first pull of its iterator. */
  readonly syntheses: FakeSynthesis[] = [];
  private readonly options: Required<Omit<FakeTextToSpeechOptions, 'name'>>;
  private failures: Array<{ error: Error; afterChunks: number }> = [];

  constructor(options: FakeTextToSpeechOptions = {}) {
    this.name = options.name ?? 'fake-tts';
    this.options = {
      sampleRate: options.sampleRate ?? 16000,
      msPerChar: options.msPerChar ?? FAKE_TTS_MS_PER_CHAR,
      chunkMs: options.chunkMs ?? 100,
      firstChunkDelayMs: options.firstChunkDelayMs ?? 0,
      chunkIntervalMs: options.chunkIntervalMs ?? 0,
    };
  }

  /** The requests received, in order. */
  get requests(): SynthesisRequest[] {
    return this.syntheses.map((s) => s.request);
  }

  /** Changes timing or audio settings for later syntheses. */
  configure(options: Omit<FakeTextToSpeechOptions, 'name'>): this {
    Object.assign(this.options, Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)));
    return this;
  }

  /**
   * The next synthesis throws `error` as is (pass a SpeechError to look like a real provider): before any audio,
   * or after `afterChunks` chunks (at the end of shorter audio). Calls queue up, one per synthesis.
   */
  failNext(error: Error, options: { afterChunks?: number } = {}): this {
    this.failures.push({ error, afterChunks: options.afterChunks ?? 0 });
    return this;
  }

  synthesize(request: SynthesisRequest): AsyncIterable<SpeechChunk> {
    return this.run(request);
  }

  private async *run(request: SynthesisRequest): AsyncGenerator<SpeechChunk> {
    const record: FakeSynthesis = { request, chunks: 0, outcome: 'streaming' };
    this.syntheses.push(record);
    const failure = this.failures.shift();
    const { sampleRate, msPerChar, chunkMs, firstChunkDelayMs, chunkIntervalMs } = this.options;
    try {
      this.checkAborted(request.signal);
      const total = Math.round((msPerChar * request.text.length * sampleRate) / 1000);
      const tone = new FakeTone(fakeToneFrequency(request.text), sampleRate);
      const perChunk = Math.max(1, Math.round((chunkMs * sampleRate) / 1000));
      await this.sleep(firstChunkDelayMs, request.signal);
      for (let at = 0; at < total; at += perChunk) {
        if (failure && record.chunks >= failure.afterChunks) throw failure.error;
        if (at > 0) await this.sleep(chunkIntervalMs, request.signal);
        this.checkAborted(request.signal);
        record.chunks++;
        yield { pcm: tone.next(Math.min(perChunk, total - at)), sampleRate };
        this.checkAborted(request.signal);
      }
      // Audio shorter than `afterChunks`: fail at its end.
      if (failure) throw failure.error;
      record.outcome = 'completed';
    } catch (error) {
      record.outcome = error instanceof SpeechError && error.code === 'aborted' ? 'aborted' : 'failed';
      throw error;
    } finally {
      if (record.outcome === 'streaming') record.outcome = request.signal.aborted ? 'aborted' : 'abandoned';
    }
  }

  private checkAborted(signal: AbortSignal): void {
    if (signal.aborted) throw new SpeechError(`${this.name}: synthesis aborted`, { code: 'aborted', provider: this.name });
  }

  /** Waits `ms`, rejecting with `aborted` the moment the signal fires. */
  private sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(new SpeechError(`${this.name}: synthesis aborted`, { code: 'aborted', provider: this.name }));
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(new SpeechError(`${this.name}: synthesis aborted`, { code: 'aborted', provider: this.name }));
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
