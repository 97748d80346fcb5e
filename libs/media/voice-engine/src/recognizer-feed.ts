import { concatPcm16 } from '@parley/audio';
import { SttStream } from '@parley/speech';

/** Held audio goes to the recognizer once this much is held. */
const HOLD_MS = 250;

/**
 * The caller's audio on its way to the recognizer: each frame as it comes while it can matter, and in pieces of
 * about a quarter second while the caller is quiet. Every write of a streaming recognizer costs a
 * WebSocket message and a write system call; a quiet caller's audio needs neither a 50 ms cadence nor a message of
 * its own per 50 ms. The recognizer gets exactly the same samples in the same order; only the writes' boundaries
 * change.
 *
 * Frames go as they come while the VAD hears speech, which lasts until 500 ms after the caller's last words (its
 * hangover): the recognizer's endpointing (300 ms of silence) gets its audio when it did before. At the VAD's end of
 * speech the engine finalizes the recognizer, which flushes first, so from then on nothing waits on the recognizer
 * hearing silence sooner; frames are held and written as one piece once 250 ms are held. Whatever is held is
 * written first when the VAD hears speech start (before the frame that started it), before `finalize()` and on
 * close. So a caller talking over the agent reaches the recognizer at the frame cadence from the VAD's speech start,
 * the held lead-in with it; only words the VAD never hears (a very quiet caller) can reach it late, by at most
 * 250 ms.
 *
 * Frames are held by reference, as the recognizers hold theirs (the engine never reuses a frame's memory); a piece
 * is copied once, when it is written.
 */
export class RecognizerFeed {
  private readonly holdSamples: number;
  private held: Int16Array[] = [];
  private heldSamples = 0;

  constructor(
    private readonly stream: SttStream,
    sampleRate: number,
  ) {
    this.holdSamples = Math.round((HOLD_MS * sampleRate) / 1000);
  }

  /** One frame, with whether the VAD hears the caller speaking once it has taken the frame. */
  push(frame: Int16Array, speaking: boolean): void {
    if (speaking) {
      this.flush();
      this.stream.write(frame);
      return;
    }
    this.held.push(frame);
    this.heldSamples += frame.length;
    if (this.heldSamples >= this.holdSamples) this.flush();
  }

  /** The caller's turn is over: the recognizer gets what is held, then settles. */
  finalize(): void {
    this.flush();
    this.stream.finalize();
  }

  async close(): Promise<void> {
    this.flush();
    await this.stream.close();
  }

  private flush(): void {
    if (!this.heldSamples) return;
    const piece = concatPcm16(this.held, this.heldSamples);
    this.held = [];
    this.heldSamples = 0;
    this.stream.write(piece);
  }
}
