import { FrameCutter } from './frame-cutter';

describe('FrameCutter', () => {
  it('cuts samples into whole frames across pushes, in order', () => {
    const cutter = new FrameCutter(4);
    const samples = Int16Array.from({ length: 10 }, (_, i) => i + 1);
    const frames = [...cutter.push(samples.subarray(0, 3)), ...cutter.push(samples.subarray(3))];
    expect(frames.map((f) => [...f])).toEqual([
      [1, 2, 3, 4],
      [5, 6, 7, 8],
    ]);
    expect([...(cutter.flush() ?? [])]).toEqual([9, 10, 0, 0]);
    expect(cutter.flush()).toBeUndefined();
  });

  it('keeps frames already handed out intact when its slab is reused', () => {
    const cutter = new FrameCutter(2);
    const first = cutter.push(Int16Array.from([7, 7]))[0];
    // 16 frames fill a slab; the next frame starts a new one rather than overwrite the first.
    for (let i = 0; i < 40; i++) cutter.push(Int16Array.from([i, i]));
    expect([...first]).toEqual([7, 7]);
  });
});
