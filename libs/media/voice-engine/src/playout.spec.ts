import { ManualClock } from './clock';
import { engineMetrics } from './metrics';
import { AudioSink, LOOKAHEAD_FRAMES, Playout } from './playout';

/** A clock whose `late`-th timer fires `byMs` after it was due, like a worker whose event loop stalled once. */
class StallingClock extends ManualClock {
  private count = 0;

  constructor(
    private readonly late: number,
    private readonly byMs: number,
  ) {
    super();
  }

  override setTimeout(fn: () => void, ms: number): unknown {
    return super.setTimeout(fn, ++this.count === this.late ? ms + this.byMs : ms);
  }
}

function sinkOn(clock: ManualClock) {
  const sentAt: number[] = [];
  const sink: AudioSink = { sendAudio: () => void sentAt.push(clock.now()), sendMark: () => undefined, sendClear: () => undefined };
  return { sink, sentAt };
}

const frame = () => new Int16Array(160);

describe('Playout', () => {
  it('sends one frame per 20 ms after a lead of two', async () => {
    const clock = new ManualClock();
    const { sink, sentAt } = sinkOn(clock);
    const playout = new Playout(sink, clock, 8000, false);
    const id = playout.open();
    for (let i = 0; i < 10; i++) playout.push(id, frame());

    await clock.advance(1000);

    expect(sentAt).toEqual([0, 0, 20, 40, 60, 80, 100, 120, 140, 160]);
  });

  it('after a late frame, gets back on the 20 ms grid a few ms per frame, never with a short burst', async () => {
    const clock = new StallingClock(5, 12); // the fifth frame timer fires 12 ms late
    const { sink, sentAt } = sinkOn(clock);
    const playout = new Playout(sink, clock, 8000, false);
    const id = playout.open();
    for (let i = 0; i < 20; i++) playout.push(id, frame());

    await clock.advance(1000);

    const gaps = sentAt.slice(2).map((t, i) => t - sentAt[i + 1]);
    expect(gaps.filter((g) => g !== 20)).toEqual([32, 16, 16, 16]);
    expect(sentAt.at(-1)).toBe(18 * 20); // back on the grid
  });

  it('keeps a sink that paces itself topped up to its lead, refilling it at once after this thread was held', async () => {
    const clock = new StallingClock(4, 100); // the fourth frame timer fires 100 ms late, as after a long scavenge
    const sentAt: number[] = [];
    const sink: AudioSink = { sendAudio: () => void sentAt.push(clock.now()), sendMark: () => undefined, sendClear: () => undefined, leadFrames: 8 };
    const playout = new Playout(sink, clock, 8000, false);
    const id = playout.open();
    for (let i = 0; i < 30; i++) playout.push(id, frame());
    const late = (await engineMetrics.framesLate.get()).values[0]?.value ?? 0;

    await clock.advance(2000);

    // The lead goes at once, then one frame per 20 ms; the held tick sends the five frames it missed together, so
    // the sink (which plays them on its own time) never ran dry, and no lateness is counted here.
    expect(sentAt.slice(0, 8)).toEqual(Array(8).fill(0));
    expect(sentAt.slice(8, 11)).toEqual([20, 40, 60]);
    expect(sentAt.slice(11, 17)).toEqual(Array(6).fill(180));
    expect(sentAt[17]).toBe(200);
    expect(sentAt).toHaveLength(30);
    expect((await engineMetrics.framesLate.get()).values[0]?.value ?? 0).toBe(late);
  });

  it('makes a producer wait while more than the lookahead is queued, and lets it go as frames are sent or cleared', async () => {
    const clock = new ManualClock();
    const { sink } = sinkOn(clock);
    const playout = new Playout(sink, clock, 8000, false);
    const id = playout.open();
    for (let i = 0; i < LOOKAHEAD_FRAMES + 10; i++) playout.push(id, frame());
    let roomAt: number | undefined;
    void playout.room().then(() => (roomAt = clock.now()));

    await clock.advance(100);
    expect(roomAt).toBeUndefined();
    await clock.advance(200);
    // Two frames of lead at 0 ms, then one per 20 ms: the queue is down to the lookahead after the 10th frame.
    expect(roomAt).toBe(160);

    for (let i = 0; i < LOOKAHEAD_FRAMES; i++) playout.push(id, frame());
    let released = false;
    void playout.room().then(() => (released = true));
    await clock.advance(0);
    expect(released).toBe(false);
    playout.clear();
    await clock.advance(0);
    expect(released).toBe(true);
  });
});
