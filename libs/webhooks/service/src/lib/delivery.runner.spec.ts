import { DeliveryEngine } from './delivery.engine';
import { DeliveryRunner } from './delivery.runner';

/** An engine whose passes claim `claims` in turn (then nothing), with the hook the runner listens on. */
function fakeEngine(claims: number[]) {
  let workArrived: () => void = () => undefined;
  const engine = {
    whenWorkArrives: (listener: () => void) => (workArrived = listener),
    pass: jest.fn(async () => claims.shift() ?? 0),
    drain: jest.fn(async () => undefined),
  };
  return { engine, arrive: () => workArrived() };
}

// Fake timers: the runner's timing is asserted exactly, whatever the load on the machine running the tests.
describe('DeliveryRunner', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('passes at once on start and right after a pass that claimed something, then idles until work arrives', async () => {
    const { engine, arrive } = fakeEngine([3]);
    const runner = new DeliveryRunner(engine as unknown as DeliveryEngine);
    runner.onApplicationBootstrap();
    try {
      await jest.advanceTimersByTimeAsync(10);
      expect(engine.pass).toHaveBeenCalledTimes(2);
      // The second pass claimed nothing: the loop idles for 200 ms…
      await jest.advanceTimersByTimeAsync(140);
      expect(engine.pass).toHaveBeenCalledTimes(2);
      // …but work that arrives cuts the wait short.
      arrive();
      await jest.advanceTimersByTimeAsync(1);
      expect(engine.pass).toHaveBeenCalledTimes(3);
      expect(engine.pass).toHaveBeenCalledWith({ wait: false });
      // Idle again, a pass every 200 ms.
      await jest.advanceTimersByTimeAsync(200);
      expect(engine.pass).toHaveBeenCalledTimes(4);
    } finally {
      await runner.onApplicationShutdown();
    }
  });

  it('on shutdown waits for the attempts in flight and runs no pass after it, even when work arrives', async () => {
    const { engine, arrive } = fakeEngine([]);
    const runner = new DeliveryRunner(engine as unknown as DeliveryEngine);
    runner.onApplicationBootstrap();
    await jest.advanceTimersByTimeAsync(1);
    expect(engine.pass).toHaveBeenCalledTimes(1);
    await runner.onApplicationShutdown();
    expect(engine.drain).toHaveBeenCalledTimes(1);

    arrive();
    await jest.advanceTimersByTimeAsync(1_000);
    expect(engine.pass).toHaveBeenCalledTimes(1);
  });
});
