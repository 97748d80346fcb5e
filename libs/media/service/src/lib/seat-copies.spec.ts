import { ArrivalTimeline, COPY_LATE_MS } from './seat-copies';

describe('placing copy frames by arrival (ArrivalTimeline)', () => {
  it('starts at the first frame’s arrival and keeps frames that come on cadence, early or late by jitter, back to back', () => {
    const timeline = new ArrivalTimeline();
    expect([100, 125, 138, 161, 175].map((arrival) => timeline.place(arrival, 20))).toEqual([100, 120, 140, 160, 180]);
  });

  it('keeps a burst after a stall back to back rather than stacking it on one moment', () => {
    const timeline = new ArrivalTimeline();
    timeline.place(0, 20);
    expect([30, 30, 30, 30].map((arrival) => timeline.place(arrival, 20))).toEqual([20, 40, 60, 80]);
  });

  it('leaves silence for audio that never came: a frame later than COPY_LATE_MS starts at its arrival', () => {
    const timeline = new ArrivalTimeline();
    timeline.place(0, 20);
    expect(timeline.place(20 + COPY_LATE_MS + 1, 20)).toBe(20 + COPY_LATE_MS + 1);
    expect(timeline.place(20 + COPY_LATE_MS, 20)).toBe(20 + COPY_LATE_MS + 21);
  });
});
