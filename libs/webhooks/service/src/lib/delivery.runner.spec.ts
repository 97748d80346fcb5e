import { DeliveryEngine } from './delivery.engine';
import { DeliveryRunner } from './delivery.runner';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(5);
  }
}

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

describe('DeliveryRunner', () => {
  it('passes at once on start and right after a pass that claimed something, then idles until work arrives', async () => {
    const { engine, arrive } = fakeEngine([3]);
    const runner = new DeliveryRunner(engine as unknown as DeliveryEngine);
    runner.onApplicationBootstrap();
    try {
      await waitFor(() => engine.pass.mock.calls.length === 2, 100);
      // The second pass claimed nothing: the loop would idle for 200 ms, but work that arrives cuts the wait short.
      await sleep(20);
      arrive();
      await waitFor(() => engine.pass.mock.calls.length === 3, 100);
      expect(engine.pass).toHaveBeenCalledWith({ wait: false });
    } finally {
      await runner.onApplicationShutdown();
    }
  });

  it('on shutdown waits for the attempts in flight and runs no pass after it, even when work arrives', async () => {
    const { engine, arrive } = fakeEngine([]);
    const runner = new DeliveryRunner(engine as unknown as DeliveryEngine);
    runner.onApplicationBootstrap();
    await waitFor(() => engine.pass.mock.calls.length === 1, 100);
    await runner.onApplicationShutdown();
    expect(engine.drain).toHaveBeenCalledTimes(1);

    arrive();
    await sleep(300);
    expect(engine.pass).toHaveBeenCalledTimes(1);
  });
});
