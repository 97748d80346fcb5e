/**
 * Voice activity detection: the caller's speech starts and ends, as the turn detector needs them. Two detectors
 * share one hysteresis (SpeechHysteresis): Silero, a neural VAD, is the worker's default (silero-vad.ts);
 * EnergyVad is its configured fallback (VAD=energy) and what the engine uses when its host gives no VAD.
 */
export type VadEvent = 'speech_start' | 'speech_end' | undefined;

/** One call's VAD. */
export interface Vad {
  /** Whether the caller is speaking, as last reported by push. */
  readonly speaking: boolean;
  /** Feeds one frame of PCM16 lasting `ms`; returns a change of state, if any. */
  push(frame: Int16Array, ms: number): VadEvent;
}

/** Makes one call's VAD for audio at `sampleRate`. */
export type VadFactory = (sampleRate: number) => Vad;

export interface HysteresisOptions {
  /** Speech needed before speech is declared, in ms. */
  startMs?: number;
  /** Quiet needed before speech is declared over, in ms. */
  hangoverMs?: number;
}

/**
 * Turns per-piece verdicts (voiced or not, lasting `ms`) into speech start and end: speech starts after `startMs`
 * of voiced audio, with gaps under 100 ms (between syllables) not resetting the count, and ends after
 * `hangoverMs` without voiced audio.
 */
export class SpeechHysteresis {
  private speechMs = 0;
  private quietMs = 0;
  private inSpeech = false;
  private readonly startMs: number;
  private readonly hangoverMs: number;

  constructor(options: HysteresisOptions = {}) {
    this.startMs = options.startMs ?? 60;
    this.hangoverMs = options.hangoverMs ?? 500;
  }

  get speaking(): boolean {
    return this.inSpeech;
  }

  update(voiced: boolean, ms: number): VadEvent {
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

export interface VadOptions extends HysteresisOptions {
  /** How far above the noise floor a frame must be (ratio of RMS). */
  ratio?: number;
  /** RMS below which nothing is speech, whatever the floor. */
  minRms?: number;
}

/**
 * Voice activity by energy, with an adaptive noise floor: a frame is speech when it is well above the noise the
 * line has been carrying and above an absolute floor. The floor is the quietest frame of the last second: speech
 * always has quieter moments between syllables, while steady comfort noise or hiss is its own minimum, so it
 * never counts as speech, however loud, from its first frame on. It costs next to nothing, but any sound that
 * rises and falls like speech (music, a television, other voices) counts as speech.
 */
export class EnergyVad implements Vad {
  // The last second of frame levels, as a ring (no allocation per frame).
  private levels = new Float64Array(0);
  private count = 0;
  private next = 0;
  private readonly hysteresis: SpeechHysteresis;
  private readonly ratio: number;
  private readonly minRms: number;

  constructor(options: VadOptions = {}) {
    this.hysteresis = new SpeechHysteresis(options);
    this.ratio = options.ratio ?? 3;
    this.minRms = options.minRms ?? 300;
  }

  get speaking(): boolean {
    return this.hysteresis.speaking;
  }

  push(frame: Int16Array, ms: number): VadEvent {
    const level = rms(frame);
    const window = Math.max(1, Math.round(1000 / ms));
    if (this.levels.length !== window) {
      this.levels = new Float64Array(window);
      this.count = 0;
      this.next = 0;
    }
    this.levels[this.next] = level;
    this.next = (this.next + 1) % window;
    this.count = Math.min(this.count + 1, window);
    let floor = Infinity;
    for (let i = 0; i < this.count; i++) if (this.levels[i] < floor) floor = this.levels[i];
    return this.hysteresis.update(level >= this.minRms && level >= floor * this.ratio, ms);
  }
}

function rms(frame: Int16Array): number {
  if (frame.length === 0) return 0;
  let sum = 0;
  for (let i = 0; i < frame.length; i++) sum += frame[i] * frame[i];
  return Math.sqrt(sum / frame.length);
}
