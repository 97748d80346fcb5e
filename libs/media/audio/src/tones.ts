/**
 * Call-progress and keypad tones, synthesized as PCM16 (mono) at any rate: what a caller hears while a person is
 * being found (ringback), and the keypresses an operator sends down a phone line in band (every carrier passes
 * audio; not every carrier's media stream can send DTMF events).
 */

/** North American ringback (ANSI T1.401): 440 + 480 Hz, 2 s on, 4 s off. */
const RINGBACK = { low: 440, high: 480, onMs: 2000, offMs: 4000 } as const;
/** Each tone of a pair at -16 dBFS, their sum well clear of clipping. */
const TONE_AMPLITUDE = 32767 * 10 ** (-16 / 20);

/** DTMF pairs (ITU-T Q.23): row frequency, column frequency. */
const DTMF: Record<string, readonly [number, number]> = {
  '1': [697, 1209], '2': [697, 1336], '3': [697, 1477], A: [697, 1633],
  '4': [770, 1209], '5': [770, 1336], '6': [770, 1477], B: [770, 1633],
  '7': [852, 1209], '8': [852, 1336], '9': [852, 1477], C: [852, 1633],
  '*': [941, 1209], '0': [941, 1336], '#': [941, 1477], D: [941, 1633],
};
/** A keypress: 120 ms of tone, then 60 ms of silence (Q.24 asks at least 40 ms of each). */
export const DTMF_TONE_MS = 120;
export const DTMF_GAP_MS = 60;

/** Endless ringback, one frame at a time; the cadence runs on from frame to frame. */
export class Ringback {
  private sample = 0;
  private readonly period: number;
  private readonly on: number;

  constructor(
    private readonly rate: number,
    private readonly frameMs = 20,
  ) {
    this.period = Math.round(((RINGBACK.onMs + RINGBACK.offMs) * rate) / 1000);
    this.on = Math.round((RINGBACK.onMs * rate) / 1000);
  }

  next(): Int16Array {
    const frame = new Int16Array(Math.round((this.frameMs * this.rate) / 1000));
    for (let i = 0; i < frame.length; i++, this.sample++) {
      const t = this.sample % this.period;
      if (t < this.on) frame[i] = pair(RINGBACK.low, RINGBACK.high, this.sample, this.rate);
    }
    return frame;
  }
}

/** The tone of one keypress followed by its gap, at `rate`; undefined for a character that is no key. */
export function dtmfTone(digit: string, rate: number): Int16Array | undefined {
  const keys = DTMF[digit.toUpperCase()];
  if (!keys) return undefined;
  const tone = Math.round((DTMF_TONE_MS * rate) / 1000);
  const samples = new Int16Array(tone + Math.round((DTMF_GAP_MS * rate) / 1000));
  for (let i = 0; i < tone; i++) samples[i] = pair(keys[0], keys[1], i, rate);
  return samples;
}

function pair(f1: number, f2: number, n: number, rate: number): number {
  const t = n / rate;
  return Math.round(TONE_AMPLITUDE * (Math.sin(2 * Math.PI * f1 * t) + Math.sin(2 * Math.PI * f2 * t)));
}
