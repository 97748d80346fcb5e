/** A played frame at or above this level is the agent speaking (about -40 dBFS; silence and comfort noise are below). */
export const SPEECH_LEVEL = 0.01;
/** The agent has stopped speaking once nothing at SPEECH_LEVEL has played for this long (pauses between sentences are shorter). */
export const SPEECH_END_MS = 500;

export interface PlaybackEvents {
  /** Echo this mark to the worker: everything received before it has played (or was dropped). */
  echo(name: string): void;
  speech(speaking: boolean): void;
}

/**
 * What the player has played, in samples handed to it: the player (an AudioWorklet) reports how many it has
 * consumed, and this decides which marks are due, when the agent starts and stops speaking, and the agent's level.
 * Positions only grow: `clear` counts the dropped samples as consumed, so a report sent before the player saw the
 * clear changes nothing.
 */
export class PlaybackTracker {
  private queued = 0;
  private consumed = 0;
  private readonly frames: { end: number; level: number }[] = [];
  private readonly marks: { name: string; at: number }[] = [];
  private speaking = false;
  private lastVoicedAt = 0;
  private levelSquares = 0;
  private levelCount = 0;

  constructor(private readonly events: PlaybackEvents) {}

  /** Samples not played yet. */
  get pending(): number {
    return this.queued - this.consumed;
  }

  enqueue(samples: number, level: number): void {
    if (samples === 0) return;
    this.queued += samples;
    this.frames.push({ end: this.queued, level });
  }

  mark(name: string): void {
    if (this.consumed >= this.queued) this.events.echo(name);
    else this.marks.push({ name, at: this.queued });
  }

  /** The player's report: `total` samples consumed since the call started. */
  played(total: number, now: number): void {
    if (total <= this.consumed) return;
    this.consumed = Math.min(total, this.queued);
    for (let frame = this.frames[0]; frame && frame.end <= this.consumed; frame = this.frames[0]) {
      this.frames.shift();
      const { level } = frame;
      this.levelSquares += level * level;
      this.levelCount++;
      if (level >= SPEECH_LEVEL) {
        this.lastVoicedAt = now;
        if (!this.speaking) this.setSpeaking(true);
      }
    }
    for (let mark = this.marks[0]; mark && mark.at <= this.consumed; mark = this.marks[0]) {
      this.marks.shift();
      this.events.echo(mark.name);
    }
  }

  /** Drops what has not played: pending marks are echoed (in order) and the agent stops speaking. */
  clear(): void {
    this.consumed = this.queued;
    this.frames.length = 0;
    for (const { name } of this.marks.splice(0)) this.events.echo(name);
    if (this.speaking) this.setSpeaking(false);
  }

  /** Called on a steady clock: ends the agent's speech after SPEECH_END_MS without voiced audio played. */
  tick(now: number): void {
    if (this.speaking && now - this.lastVoicedAt >= SPEECH_END_MS) this.setSpeaking(false);
  }

  /** Level of what played since the last call (0 when nothing did), and starts the next window. */
  takeLevel(): number {
    const level = this.levelCount ? Math.sqrt(this.levelSquares / this.levelCount) : 0;
    this.levelSquares = 0;
    this.levelCount = 0;
    return level;
  }

  private setSpeaking(speaking: boolean): void {
    this.speaking = speaking;
    this.events.speech(speaking);
  }
}
