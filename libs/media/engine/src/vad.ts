/**
 * Voice activity by energy, with an adaptive noise floor: a frame is speech when it is well above the noise the
 * line has been carrying (so steady comfort noise or hiss never counts as speech) and above an absolute floor.
 * Speech starts after `startMs` of speech frames and ends after `hangoverMs` without them.
 *
 * Chosen over a neural VAD: Silero's model is not shipped inside any maintained npm package here, and on 8 kHz
 * phone audio a tuned energy detector with an adaptive floor separates speech from line noise well enough for
 * turn-taking, at a tiny fraction of the CPU (hundreds of calls per core).
 */
export interface VadOptions {
  /** Speech needed before speech is declared, in ms. */
  startMs?: number;
  /** Quiet needed before speech is declared over, in ms. */
  hangoverMs?: number;
  /** How far above the noise floor a frame must be (ratio of RMS). */
  ratio?: number;
  /** RMS below which nothing is speech, whatever the floor. */
  minRms?: number;
}

export type VadEvent = 'speech_start' | 'speech_end' | undefined;

export class EnergyVad {
  private floor: number;
  private speechMs = 0;
  private quietMs = 0;
  private inSpeech = false;
  private readonly startMs: number;
  private readonly hangoverMs: number;
  private readonly ratio: number;
  private readonly minRms: number;

  constructor(options: VadOptions = {}) {
    this.startMs = options.startMs ?? 60;
    this.hangoverMs = options.hangoverMs ?? 500;
    this.ratio = options.ratio ?? 3;
    this.minRms = options.minRms ?? 300;
    // Start from a quiet line: the first words must count even when the caller speaks before any silence.
    this.floor = this.minRms / this.ratio;
  }

  get speaking(): boolean {
    return this.inSpeech;
  }

  /** Feeds one frame lasting `ms`; returns a change of state, if any. */
  push(frame: Int16Array, ms: number): VadEvent {
    const level = rms(frame);
    // The floor follows quiet quickly and loud slowly, so speech does not raise it but line noise does.
    this.floor = level < this.floor ? this.floor * 0.9 + level * 0.1 : this.floor * 0.995 + level * 0.005;
    const voiced = level >= this.minRms && level >= this.floor * this.ratio;
    if (voiced) {
      this.speechMs += ms;
      this.quietMs = 0;
      if (!this.inSpeech && this.speechMs >= this.startMs) {
        this.inSpeech = true;
        return 'speech_start';
      }
    } else {
      this.quietMs += ms;
      if (this.quietMs >= 100) this.speechMs = 0;
      if (this.inSpeech && this.quietMs >= this.hangoverMs) {
        this.inSpeech = false;
        return 'speech_end';
      }
    }
    return undefined;
  }
}

export function rms(frame: Int16Array): number {
  if (frame.length === 0) return 0;
  let sum = 0;
  for (let i = 0; i < frame.length; i++) sum += frame[i] * frame[i];
  return Math.sqrt(sum / frame.length);
}
