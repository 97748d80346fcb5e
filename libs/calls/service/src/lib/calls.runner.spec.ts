import { CallReaper, REAPER_PASS_MS } from './call-reaper';
import { CallsRunner } from './calls.runner';
import { CarrierReconciler, RECONCILE_PASS_MS } from './carrier-reconciler';
import { CarrierRegistry } from './carrier-registry';
import { POST_CALL_POLL_MS, PostCallAnalysis } from './post-call-analysis';

function runnerWith(carriers: string[]) {
  const reaper = { runPass: jest.fn(async () => []) };
  const reconciler = { runPass: jest.fn(async () => 0) };
  const analysis = { startDue: jest.fn(async () => []), stop: jest.fn(async () => undefined) };
  const runner = new CallsRunner(
    reaper as unknown as CallReaper,
    reconciler as unknown as CarrierReconciler,
    analysis as unknown as PostCallAnalysis,
    { names: carriers } as unknown as CarrierRegistry,
  );
  return { runner, reaper, reconciler, analysis };
}

describe('CallsRunner', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('runs the reaper, the carrier reconciler and the post-call worker on their periods until shutdown, then hands analyses back', async () => {
    const { runner, reaper, reconciler, analysis } = runnerWith(['twilio']);
    runner.onApplicationBootstrap();
    await jest.advanceTimersByTimeAsync(REAPER_PASS_MS);
    expect(reaper.runPass).toHaveBeenCalledTimes(1);
    expect(reconciler.runPass).toHaveBeenCalledTimes(REAPER_PASS_MS / RECONCILE_PASS_MS);
    expect(analysis.startDue).toHaveBeenCalledTimes(REAPER_PASS_MS / POST_CALL_POLL_MS);

    await runner.beforeApplicationShutdown();
    expect(analysis.stop).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(3 * REAPER_PASS_MS);
    expect(reaper.runPass).toHaveBeenCalledTimes(1);
    expect(analysis.startDue).toHaveBeenCalledTimes(REAPER_PASS_MS / POST_CALL_POLL_MS);
  });

  it('looks nothing up at a carrier when the deployment has none', async () => {
    const { runner, reaper, reconciler } = runnerWith([]);
    runner.onApplicationBootstrap();
    await jest.advanceTimersByTimeAsync(2 * RECONCILE_PASS_MS);
    expect(reaper.runPass).toHaveBeenCalledTimes(2);
    expect(reconciler.runPass).not.toHaveBeenCalled();
    await runner.beforeApplicationShutdown();
  });
});
