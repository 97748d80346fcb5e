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
  /**
   * Set by a sink that paces frames itself (the media worker's stream thread): Playout fills this many frames
   * ahead of real time into it and tops it up every REFILL_FRAMES frames (so at least leadFrames - REFILL_FRAMES
   * stay queued), and after a pause of its own makes up the missed frames at once, so the sink never runs dry while
   * this thread is held. Absent: the sink sends each frame at once and Playout's timing
   * is the caller's (a lead of 2 frames, lateness made up a few ms per frame).
   */
  readonly leadFrames?: number;
}

export const FRAME_MS = 20;
/** Frames sent ahead of real time, so carrier jitter never starves the caller's ear. */
const LEAD_FRAMES = 2;
/** At most this much of a lag is made up per frame (well inside the ±5 ms a carrier expects of a 20 ms cadence). */
const MAX_CATCH_UP_MS = 4;
/**
 * A sink that paces itself is topped up every this many frames (100 ms), not every frame: a timer per frame per call
 * was a wake-up of the main thread 50 times a second for each call speaking, and the sink plays on meanwhile.
 */
export const REFILL_FRAMES = 5;
/** A mark every this many frames tells how much of a segment the caller actually heard. */
const MARK_EVERY = 10;
/**
 * Audio queued ahead of playback before synthesis is asked to wait (1.5 s): enough to cover the next sentence's
 * time to first audio, while a long answer never sits in memory whole and a barge-in wastes little synthesis.
 */
export const LOOKAHEAD_FRAMES = 75;

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
  /** Frames pushed and not yet sent, over every segment. */
  private queued = 0;
  /** Frames still to send at once to complete the lead of the current playback run. */
  private leadLeft = 0;
  private roomWaiters: (() => void)[] = [];
  private readonly lead: number;

  constructor(
    private readonly sink: AudioSink,
    private readonly clock: Clock,
    sampleRate: number,
    /** False for sinks that never echo marks: a segment then counts as heard once sent. */
    private readonly marksEchoed = true,
  ) {
    this.frameSamples = (sampleRate * FRAME_MS) / 1000;
    this.lead = sink.leadFrames ?? LEAD_FRAMES;
  }

  get frameSize(): number {
    return this.frameSamples;
  }

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
    this.queued++;
    this.kick();
  }

  /**
   * Resolves once at most LOOKAHEAD_FRAMES wait to be sent, or playout is cleared: the producer's backpressure.
   * When there is room already it still resolves on a later turn (through the clock), so a producer faster than
   * real time never holds the event loop for a whole sentence.
   */
  room(): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.queued <= LOOKAHEAD_FRAMES) this.clock.setTimeout(resolve, 0);
      else this.roomWaiters.push(resolve);
    });
  }

  private wakeProducers(): void {
    if (!this.roomWaiters.length || this.queued > LOOKAHEAD_FRAMES) return;
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const wake of waiters) wake();
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
    this.queued = 0;
    this.leadLeft = 0;
    this.wakeProducers();
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
    // Resume with a small lead over real time; from then on one frame per 20 ms keeps that lead constant. Frames
    // come one push at a time, so the lead is completed by the pushes that follow before the first tick.
    if (this.leadLeft > 0 && this.sendOne()) this.leadLeft--;
    if (this.timer !== undefined) return;
    this.nextAt = this.clock.now();
    this.leadLeft = this.lead;
    while (this.leadLeft > 0 && this.sendOne()) this.leadLeft--;
    this.schedule();
  }

  private schedule(): void {
    if (!this.queue.length) {
      this.timer = undefined;
      return;
    }
    this.nextAt += FRAME_MS;
    // A sink that paces itself wakes this thread once per REFILL_FRAMES: the tick then sends the frames due since.
    const wakeAt = this.sink.leadFrames === undefined ? this.nextAt : this.nextAt + (REFILL_FRAMES - 1) * FRAME_MS;
    // After a late frame, catch up with the 20 ms grid a few ms per frame rather than with one short interval: the
    // lead covers the lag meanwhile, and the carrier's jitter buffer sees one irregular gap instead of two.
    this.timer = this.clock.setTimeout(() => this.tick(), Math.max(FRAME_MS - MAX_CATCH_UP_MS, wakeAt - this.clock.now()));
  }

  private tick(): void {
    this.leadLeft = 0;
    const lag = this.clock.now() - this.nextAt;
    if (lag > FRAME_MS && this.sink.leadFrames !== undefined) {
      // The sink plays on between refills, and while this thread was held: refill its lead now; lateness is the
      // sink's to count.
      for (let missed = Math.floor(lag / FRAME_MS); missed > 0 && this.sendOne(); missed--) this.nextAt += FRAME_MS;
    } else if (lag > FRAME_MS) {
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
        this.queued--;
        this.wakeProducers();
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
