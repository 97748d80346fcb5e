import { SttStream } from '@parley/speech';
import { RecognizerFeed } from './recognizer-feed';

const RATE = 8000;
const FRAME = 160; // 20 ms
/** What a 250 ms hold becomes in 20 ms frames: the first 13 frames reaching 250 ms. */
const PIECE = 13 * FRAME;

/** A recognizer stream that records what it is asked, in order. */
class RecordingStream implements SttStream {
  readonly calls: Array<{ write: Int16Array } | 'finalize' | 'close'> = [];

  write(pcm: Int16Array): void {
    this.calls.push({ write: pcm.slice() });
  }
  finalize(): void {
    this.calls.push('finalize');
  }
  async close(): Promise<void> {
    this.calls.push('close');
  }

  /** Each call as the samples written, or its name. */
  get shape(): Array<number | string> {
    return this.calls.map((c) => (typeof c === 'string' ? c : c.write.length));
  }

  get audio(): number[] {
    return this.calls.flatMap((c) => (typeof c === 'string' ? [] : Array.from(c.write)));
  }
}

let next = 0;
/** A frame of distinct samples, so that order and content can be checked. */
const frame = () => Int16Array.from({ length: FRAME }, () => (next++ % 65536) - 32768);

function rig() {
  const stream = new RecordingStream();
  const feed = new RecognizerFeed(stream, RATE);
  const pushed: Int16Array[] = [];
  const push = (frames: number, speaking: boolean) => {
    for (let i = 0; i < frames; i++) {
      const f = frame();
      pushed.push(f);
      feed.push(f, speaking);
    }
  };
  const audio = () => pushed.flatMap((f) => Array.from(f));
  return { stream, feed, push, audio };
}

describe('RecognizerFeed', () => {
  it('writes a quiet caller’s audio in pieces of about 250 ms', () => {
    const { stream, push, audio } = rig();

    push(3 * 13 + 5, false);

    expect(stream.shape).toEqual([PIECE, PIECE, PIECE]);
    expect(stream.audio).toEqual(audio().slice(0, 3 * PIECE));
  });

  it('writes each frame as it comes while the caller speaks, and holds again from the first frame after', () => {
    const { stream, push, audio } = rig();

    push(25, true);
    push(13, false);

    expect(stream.shape).toEqual([...Array(25).fill(FRAME), PIECE]);
    expect(stream.audio).toEqual(audio());
  });

  it('writes what it holds when speech starts, before the frame that started it', () => {
    const { stream, push, audio } = rig();
    push(5, false);
    expect(stream.shape).toEqual([]);

    push(2, true);

    expect(stream.shape).toEqual([5 * FRAME, FRAME, FRAME]);
    expect(stream.audio).toEqual(audio());
  });

  it('writes what it holds before the recognizer finalizes', () => {
    const { stream, feed, push, audio } = rig();
    push(4, false);

    feed.finalize();

    expect(stream.shape).toEqual([4 * FRAME, 'finalize']);
    expect(stream.audio).toEqual(audio());
  });

  it('writes what it holds before closing the recognizer', async () => {
    const { stream, feed, push, audio } = rig();
    push(7, false);

    await feed.close();

    expect(stream.shape).toEqual([7 * FRAME, 'close']);
    expect(stream.audio).toEqual(audio());
  });

  it('gives the recognizer exactly the audio it was given, in order, across quiet, speech and quiet', async () => {
    const { stream, feed, push, audio } = rig();

    push(60, false);
    push(40, true);
    push(90, false);
    push(3, true);
    push(20, false);
    feed.finalize();
    await feed.close();

    expect(stream.audio).toEqual(audio());
  });
});
