/** Root mean square of PCM16 samples: the signal's level (0 for silence, ~23 170 for a full-scale sine). */
export function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / Math.max(1, pcm.length));
}

/** Goertzel: the signal's power at `hz` (relative; compare frequencies of one signal). */
export function powerAt(pcm: Int16Array, hz: number, rate: number): number {
  const coeff = 2 * Math.cos((2 * Math.PI * hz) / rate);
  let s1 = 0;
  let s2 = 0;
  for (const x of pcm) {
    const s0 = x + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return s1 * s1 + s2 * s2 - coeff * s1 * s2;
}
