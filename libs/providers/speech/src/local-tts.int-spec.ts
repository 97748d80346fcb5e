import { LocalTextToSpeech } from './local-tts';
import { SpeechChunk } from './text-to-speech';

// mespeak breaks on its 80th line in one realm and used to take the process down with it: 2 000 lines in this
// one process, through the pool that replaces its workers long before that, each one whole. Two workers (the
// machine's two cores) and the most lines per worker allowed, so fewer engine loads: about 85 s of CPU, about
// 45 s on an idle 2-core machine (the timeout leaves room for a machine shared with other work).
const LINES = 2_000;
const IN_FLIGHT = 8;
const SENTENCES = ['Yes.', 'Thank you.', 'One moment please.', 'Your table is booked.', 'Goodbye for now.', 'Hello there.', 'Is that right?', 'I can help.'];

describe('LocalTextToSpeech long run', () => {
  const tts = new LocalTextToSpeech({ workers: 2, recycleAfter: 60 });
  afterAll(() => tts.close());

  it(`speaks ${LINES} lines in one process, every one whole and audible`, async () => {
    await tts.warmUp(['en-US']);
    // mespeak is deterministic: a line's audio has the same length every time, and a truncated one is shorter.
    const expected = new Map<string, number>();
    for (const text of SENTENCES) expected.set(text, (await speak(text)).length);

    const bad: string[] = [];
    let next = 0;
    const runner = async () => {
      for (let i = next++; i < LINES; i = next++) {
        const text = SENTENCES[i % SENTENCES.length];
        const pcm = await speak(text);
        if (pcm.length !== expected.get(text) || rms(pcm) < 500) bad.push(`line ${i} "${text}": ${pcm.length} samples, rms ${rms(pcm).toFixed(0)}`);
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, runner));

    expect(bad).toEqual([]);
    expect(tts.stats.failed).toBe(0);
    expect(tts.stats.recycled).toBeGreaterThanOrEqual(Math.floor(LINES / 60) - 2);
  }, 240_000);

  async function speak(text: string): Promise<Int16Array> {
    const chunks: SpeechChunk[] = [];
    for await (const chunk of tts.synthesize({ text, language: 'en-US', signal: new AbortController().signal })) {
      if (chunk.sampleRate !== 22050) throw new Error(`sample rate ${chunk.sampleRate}`);
      chunks.push(chunk);
    }
    const pcm = new Int16Array(chunks.reduce((n, c) => n + c.pcm.length, 0));
    let at = 0;
    for (const c of chunks) {
      pcm.set(c.pcm, at);
      at += c.pcm.length;
    }
    return pcm;
  }
});

function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / Math.max(1, pcm.length));
}
