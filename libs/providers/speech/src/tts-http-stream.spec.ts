import { SpeechChunk } from './text-to-speech';
import { streamedSynthesis, StreamedSynthesis } from './tts-http-stream';

/** A synthesis whose body is `pieces` (PCM16 LE bytes), recording the signal it was opened with. */
function synthesis(pieces: number[][]): { s: StreamedSynthesis; opened: AbortSignal[] } {
  const opened: AbortSignal[] = [];
  const s: StreamedSynthesis = {
    provider: 'test',
    request: { text: 'Hello.', language: 'en-US', signal: new AbortController().signal },
    timeoutMs: 1_000,
    sampleRate: 8000,
    open: (signal) => {
      opened.push(signal);
      return Promise.resolve(
        new ReadableStream<Uint8Array>({
          start(controller) {
            for (const piece of pieces) controller.enqueue(Uint8Array.from(piece));
            controller.close();
          },
        }),
      );
    },
    classify: () => undefined,
  };
  return { s, opened };
}

describe('streamedSynthesis', () => {
  it('leaves a request read to its end alone (its connection goes back to the pool), and aborts one left early', async () => {
    const whole = synthesis([[1, 0, 2, 0], [3, 0]]);
    const chunks: SpeechChunk[] = [];
    for await (const chunk of streamedSynthesis(whole.s)) chunks.push(chunk);
    expect(chunks.map((c) => [...c.pcm])).toEqual([[1, 2], [3]]);
    expect(whole.opened[0].aborted).toBe(false);

    const left = synthesis([[1, 0], [2, 0]]);
    for await (const chunk of streamedSynthesis(left.s)) {
      expect([...chunk.pcm]).toEqual([1]);
      break;
    }
    expect(left.opened[0].aborted).toBe(true);
  });
});
