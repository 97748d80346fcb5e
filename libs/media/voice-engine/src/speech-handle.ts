import { Resampler } from '@parley/audio';
import { SpeechChunk } from '@parley/speech';
import { Clock } from './clock';
import { FrameCutter } from './frame-cutter';
import { engineMetrics } from './metrics';
import { Playout } from './playout';
import { SentenceChunker } from './sentences';
import { TurnTrace } from './turn-trace';

/** Ends a sentence early in a spoken stream: what is pending is synthesized now (before a tool runs). */
export const FLUSH = Symbol('flush');
/**
 * Text as it streams; FLUSH; or a fixed line, said whole as one segment (what is pending is said first), so it
 * is played from the fixed lines' cache when held there.
 */
export type Spoken = string | typeof FLUSH | { line: string };

export interface SpeechDeps {
  playout: Playout;
  clock: Clock;
  /** Sample rate of the audio out. */
  sampleRate: number;
  /** Audio for one sentence, or a whole fixed line (`fixed`: from the fixed lines' cache when held). */
  synthesize(text: string, signal: AbortSignal, fixed: boolean): AsyncIterable<SpeechChunk>;
  log(message: string, fields?: Record<string, unknown>): void;
}

/**
 * One agent turn: its text (a model's stream, or a fixed line) → sentences → synthesis → paced playout, every stage
 * bound to the handle's AbortSignal, so `interrupt()` stops the model's stream, the synthesizer's request, a
 * running tool's request and the audio not yet played, all at once.
 */
export class SpeechHandle {
  private readonly controller = new AbortController();
  /** Sentences spoken so far, by playout segment. */
  readonly segments: { id: number; text: string }[] = [];
  firstAudioAt: number | undefined;

  constructor(
    private readonly deps: SpeechDeps,
    readonly interruptible: boolean,
    /** Offset of the turn's start on the call's timeline. */
    readonly startMs: number,
    /** The caller's end of speech this turn answers, for the response latency. */
    private readonly endOfSpeechAt?: number,
    /** The spans of the caller's turn this answers (an answer, not a greeting or a fixed line on its own). */
    readonly trace?: TurnTrace,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get interrupted(): boolean {
    return this.controller.signal.aborted;
  }

  /**
   * The caller's end of speech to the turn's first audio, ms (the `response` stage latency); undefined when the
   * turn answers no caller speech (a greeting, a fixed line) or produced no audio.
   */
  get responseLatencyMs(): number | undefined {
    return this.firstAudioAt !== undefined && this.endOfSpeechAt !== undefined ? Math.max(0, this.firstAudioAt - this.endOfSpeechAt) : undefined;
  }

  /** Stops every stage at once; the carrier drops what it buffered. */
  interrupt(): void {
    this.controller.abort();
    this.deps.playout.clear();
  }

  /** Speaks `source` sentence by sentence; resolves once it was heard in full, or interrupted. */
  async run(source: AsyncIterable<Spoken>): Promise<void> {
    const signal = this.signal;
    const chunker = new SentenceChunker();
    try {
      for await (const piece of source) {
        if (signal.aborted) break;
        const ready = typeof piece === 'string' ? chunker.push(piece) : [chunker.flush()].filter((x): x is string => !!x);
        for (const s of ready) {
          if (signal.aborted) break;
          await this.sentence(s, false);
        }
        if (typeof piece === 'object' && piece.line && !signal.aborted) await this.sentence(piece.line, true);
      }
      const rest = chunker.flush();
      if (rest && !signal.aborted) await this.sentence(rest, false);
      await this.played();
    } catch (error) {
      if (!signal.aborted) this.deps.log('speaking failed', { err: String(error) });
    }
  }

  /** Resolves once everything said so far has been heard (or cleared). */
  played(): Promise<void> {
    return Promise.all(this.segments.map((s) => this.deps.playout.played(s.id))).then(() => undefined);
  }

  /** What the caller heard: all of it, or, when interrupted, up to the word the audio was cut at. */
  heardText(): string {
    const { playout } = this.deps;
    if (!this.interrupted) return this.segments.map((s) => s.text).join(' ');
    const parts: string[] = [];
    for (const s of this.segments) {
      const total = playout.totalMs(s.id);
      const heard = playout.heardMs(s.id);
      if (total > 0 && heard >= total) {
        parts.push(s.text);
        continue;
      }
      if (heard > 0 && total > 0) {
        const words = s.text.split(/\s+/);
        parts.push(words.slice(0, Math.floor((words.length * heard) / total)).join(' '));
      }
      break;
    }
    return parts.join(' ').trim();
  }

  /** Forgets the turn's playout segments once its text is recorded. */
  release(): void {
    for (const s of this.segments) this.deps.playout.release(s.id);
  }

  /** Synthesizes one sentence (or fixed line) into a playout segment, as fast as playback makes room for it. */
  private async sentence(text: string, fixed: boolean): Promise<void> {
    const { playout, clock, sampleRate } = this.deps;
    const signal = this.signal;
    const id = playout.open();
    this.segments.push({ id, text });
    const frames = new FrameCutter(playout.frameSize);
    let resampler: Resampler | undefined;
    try {
      this.trace?.synthesisStarted();
      for await (const chunk of this.deps.synthesize(text, signal, fixed)) {
        if (signal.aborted) break;
        resampler ??= new Resampler(chunk.sampleRate, sampleRate);
        for (const frame of frames.push(resampler.process(chunk.pcm))) {
          if (this.firstAudioAt === undefined) {
            this.firstAudioAt = clock.now();
            if (this.endOfSpeechAt !== undefined) engineMetrics.stageLatency.observe({ stage: 'response' }, (this.firstAudioAt - this.endOfSpeechAt) / 1000);
            this.trace?.firstAudio(this.firstAudioAt);
          }
          playout.push(id, frame);
        }
        // Backpressure: a vendor faster than real time is read only as playback makes room (see Playout.room).
        await playout.room();
      }
      const last = frames.flush();
      if (last && !signal.aborted) playout.push(id, last);
    } catch (error) {
      if (!signal.aborted) this.deps.log('sentence not synthesized', { err: String(error) });
    }
    playout.end(id);
  }
}
