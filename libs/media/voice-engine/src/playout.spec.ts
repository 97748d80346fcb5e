import { ManualClock } from './clock';
import { engineMetrics } from './metrics';
import { AudioSink, LOOKAHEAD_FRAMES, Playout, REFILL_FRAMES } from './playout';

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

  it('tops a sink that paces itself up to its lead every 100 ms, and at once after this thread was held', async () => {
    const clock = new StallingClock(3, 100); // the third refill timer fires 100 ms late, as after a long scavenge
    const sentAt: number[] = [];
    const sink: AudioSink = { sendAudio: () => void sentAt.push(clock.now()), sendMark: () => undefined, sendClear: () => undefined, leadFrames: 8 };
    const playout = new Playout(sink, clock, 8000, false);
    const id = playout.open();
    for (let i = 0; i < 40; i++) playout.push(id, frame());
    const late = (await engineMetrics.framesLate.get()).values[0]?.value ?? 0;

    await clock.advance(2000);

    // The lead goes at once, then the frames due since each refill, one timer per REFILL_FRAMES frames: the sink
    // (which plays them on its own time) holds at least lead − REFILL_FRAMES. The held refill (due at 300, fired at
    // 400) sends the ten frames due by then together; no lateness is counted here.
    const count = (at: number) => sentAt.filter((t) => t === at).length;
    expect(count(0)).toBe(8);
    expect([count(100), count(200)]).toEqual([REFILL_FRAMES, REFILL_FRAMES]);
    expect(count(300)).toBe(0);
    expect(count(400)).toBe(2 * REFILL_FRAMES);
    expect(count(500)).toBe(REFILL_FRAMES);
    expect(new Set(sentAt).size).toBeLessThanOrEqual(8);
    expect(sentAt).toHaveLength(40);
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
