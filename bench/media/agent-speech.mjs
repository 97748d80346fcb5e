// Which part of the agent's speech a frame the caller receives carries. The fake voices speak each sentence as a
// tone of its own (fakeToneFrequency), so the caller can tell the greeting, each answer (consecutive answers differ:
// vendor-fakes.mjs ANSWERS) and their first and last sentences apart by ear: where a turn begins and ends, and
// whether audio after a `clear` is the interrupted answer. Frames are PCM at the line's rate: 8 kHz on a phone line
// (μ-law decoded), 16 kHz from the realtime socket.

/** A frame quieter than this (RMS) carries no speech: the padded tail of a sentence. */
const SILENT_RMS = 300;
/** Tones closer than this could be taken for each other in a 20 ms frame (Goertzel over 20 ms: 50 Hz bins). */
const MIN_TONE_GAP_HZ = 100;

/** Whether a frame of agent audio carries speech (any voice, tones or words), not silence. */
export function hasEnergy(pcm) {
  let energy = 0;
  for (let i = 0; i < pcm.length; i++) energy += pcm[i] * pcm[i];
  return Math.sqrt(energy / pcm.length) >= SILENT_RMS;
}

/** Goertzel: the power at `hz` of `pcm` sampled at `rate`. */
function powerAt(pcm, hz, rate) {
  const coeff = 2 * Math.cos((2 * Math.PI * hz) / rate);
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < pcm.length; i++) {
    const s0 = pcm[i] + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return s1 * s1 + s2 * s2 - coeff * s1 * s2;
}

/**
 * A classifier of received frames (PCM sampled at `rate`) into the parts of the agent's turns:
 * `{ turn: 'greeting' | 'answer 1' | 'answer 2' …, sentence, of, first, last }`, or undefined when a frame carries
 * none of them (silence). None for a voice without per-sentence tones: the offline voice speaks words, so with it
 * the caller goes by timing alone.
 */
export function agentSpeech({ libs, voice, greeting, answers, rate }) {
  if (voice === 'local') return undefined;
  const { fakeToneFrequency } = libs.speech;
  const parts = [{ turn: 'greeting', sentence: 1, of: 1, first: true, last: true, hz: fakeToneFrequency(greeting) }];
  answers.forEach((answer, a) => {
    // The engine synthesizes sentence by sentence, cut as its chunker cuts them.
    const chunker = new libs.engine.SentenceChunker();
    const sentences = [...chunker.push(`${answer} `), chunker.flush()].filter(Boolean);
    sentences.forEach((s, i) => parts.push({ turn: `answer ${a + 1}`, sentence: i + 1, of: sentences.length, first: i === 0, last: i === sentences.length - 1, hz: fakeToneFrequency(s) }));
  });
  for (const p of parts) {
    const near = parts.find((q) => q !== p && Math.abs(q.hz - p.hz) < MIN_TONE_GAP_HZ);
    if (near) throw new Error(`agent-speech: ${p.turn} sentence ${p.sentence} and ${near.turn} sentence ${near.sentence} sound alike (${p.hz} and ${near.hz} Hz): reword one`);
  }
  return (pcm) => {
    if (!hasEnergy(pcm)) return undefined;
    let best;
    let bestPower = -1;
    for (const part of parts) {
      const power = powerAt(pcm, part.hz, rate);
      if (power > bestPower) [best, bestPower] = [part, power];
    }
    return best;
  };
}
