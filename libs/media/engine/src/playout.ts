import { Clock } from './clock';
import { engineMetrics } from './metrics';

/** Where the engine's audio goes: the carrier stream (through its protocol adapter) or a test double. */
export interface AudioSink {
  /** One frame of PCM16 mono at the engine's sample rate. */
  sendAudio(frame: Int16Array): void;
  /** Asks for `name` to come back (Playout.onMark) once everything sent before it has played. */
  sendMark(name: string): void;
  /** Drops everything sent and not yet played. */
  sendClear(): void;
}

export const FRAME_MS = 20;
/** Frames sent ahead of real time, so carrier jitter never starves the caller's ear. */
const LEAD_FRAMES = 2;
/** A mark every this many frames tells how much of a segment the caller actually heard. */
const MARK_EVERY = 10;

interface Segment {
  id: number;
  /** Frames not yet sent (sent ones are released). */
  pending: Int16Array[];
  /** Frames pushed in all. */
  total: number;
  sent: number;
  /** Frames confirmed played by the carrier's marks. */
  played: number;
  ended: boolean;
  cleared: boolean;
  done: () => void;
  whenPlayed: Promise<void>;
}

/**
 * Paced playback: one frame every 20 ms (drift-corrected against the clock), a mark every 200 ms and at each
 * segment's end, and `clear()` that stops at once: nothing queued is sent after it and the carrier drops what
 * it buffered. Marks echoed by the carrier say exactly how much of each segment was heard.
 */
export class Playout {
  private readonly queue: Segment[] = [];
  private readonly segments = new Map<number, Segment>();
  private nextId = 1;
  private timer: unknown;
  private nextAt = 0;
  private readonly frameSamples: number;

  constructor(
    private readonly sink: AudioSink,
    private readonly clock: Clock,
    sampleRate: number,
    /** False for sinks that never echo marks: a segment then counts as heard once sent. */
    private readonly marksEchoed = true,
  ) {
    this.frameSamples = (sampleRate * FRAME_MS) / 1000;
  }

  get frameSize(): number {
    return this.frameSamples;
  }

  /** True while anything is queued or not yet confirmed played. */
  /** A new segment (one sentence); frames are appended with `push` and closed with `end`. */
  open(): number {
    const id = this.nextId++;
    let done!: () => void;
    const whenPlayed = new Promise<void>((resolve) => (done = resolve));
    const segment: Segment = { id, pending: [], total: 0, sent: 0, played: 0, ended: false, cleared: false, done, whenPlayed };
    this.segments.set(id, segment);
    this.queue.push(segment);
    return id;
  }

  push(id: number, frame: Int16Array): void {
    const segment = this.segments.get(id);
    if (!segment || segment.cleared) return;
    segment.pending.push(frame);
    segment.total++;
    this.kick();
  }

  end(id: number): void {
    const segment = this.segments.get(id);
    if (!segment || segment.cleared) return;
    segment.ended = true;
    this.kick();
    this.settle(segment);
  }

  /** Resolves when the segment has been heard in full, or cleared. */
  played(id: number): Promise<void> {
    return this.segments.get(id)?.whenPlayed ?? Promise.resolve();
  }

  /** Milliseconds of the segment the caller heard (as confirmed by marks; sent frames for mark-less sinks). */
  heardMs(id: number): number {
    const s = this.segments.get(id);
    return s ? s.played * FRAME_MS : 0;
  }

  totalMs(id: number): number {
    const s = this.segments.get(id);
    return s ? s.total * FRAME_MS : 0;
  }

  /** Barge-in: stop sending, tell the carrier to drop its buffer; every open segment is over. */
  clear(): void {
    const live = [...this.segments.values()].filter((s) => !s.cleared && !(s.ended && s.played >= s.total));
    if (!live.length) return;
    const sentAny = live.some((s) => s.sent > 0);
    for (const s of live) {
      s.cleared = true;
      s.pending = [];
      s.done();
    }
    this.queue.length = 0;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    if (sentAny) this.sink.sendClear();
  }

  /** A mark came back from the carrier. */
  onMark(name: string): void {
    const [id, frames] = name.split(':').map(Number);
    const segment = this.segments.get(id);
    // After a clear the carrier returns pending marks at once: those frames were never heard.
    if (!segment || segment.cleared) return;
    segment.played = Math.max(segment.played, frames);
    this.settle(segment);
  }

  private settle(segment: Segment): void {
    if (segment.ended && segment.played >= segment.total) segment.done();
  }

  /** Forgets a segment once its turn no longer needs its counts. */
  release(id: number): void {
    this.segments.delete(id);
  }

  private kick(): void {
    if (this.timer !== undefined) return;
    this.nextAt = this.clock.now();
    // Resume with a small lead over real time; from then on one frame per 20 ms keeps that lead constant.
    for (let i = 0; i < LEAD_FRAMES; i++) if (!this.sendOne()) break;
    this.schedule();
  }

  private schedule(): void {
    if (!this.queue.length) {
      this.timer = undefined;
      return;
    }
    this.nextAt += FRAME_MS;
    this.timer = this.clock.setTimeout(() => this.tick(), Math.max(0, this.nextAt - this.clock.now()));
  }

  private tick(): void {
    if (this.clock.now() - this.nextAt > FRAME_MS) {
      engineMetrics.framesLate.inc();
      this.nextAt = this.clock.now();
    }
    if (!this.sendOne()) {
      // Nothing ready yet (synthesis is behind): the next push resumes playback.
      this.timer = undefined;
      return;
    }
    this.schedule();
  }

  /** Sends the next frame; false when none is ready. */
  private sendOne(): boolean {
    for (;;) {
      const segment = this.queue[0];
      if (!segment) return false;
      const frame = segment.pending.shift();
      if (frame) {
        segment.sent++;
        this.sink.sendAudio(frame);
        const last = segment.ended && segment.sent === segment.total;
        if (last || segment.sent % MARK_EVERY === 0) this.mark(segment);
        if (last) this.queue.shift();
        return true;
      }
      if (!segment.ended) return false;
      // An ended segment with every frame sent (possibly empty).
      this.queue.shift();
      this.mark(segment);
    }
  }

  private mark(segment: Segment): void {
    if (this.marksEchoed) this.sink.sendMark(`${segment.id}:${segment.sent}`);
    else {
      segment.played = segment.sent;
      this.settle(segment);
    }
  }
}
