import { ANALYTICS_REFRESH_PASS_MS, CallAnalyticsRefresher } from './call-analytics-refresher';
import { CallReaper, REAPER_PASS_MS } from './call-reaper';
import { CallsRunner } from './calls.runner';
import { CarrierReconciler, RECONCILE_PASS_MS } from './carrier-reconciler';
import { CarrierRegistry } from './carrier-registry';
import { POST_CALL_POLL_MS, PostCallAnalysis } from './post-call-analysis';

function runnerWith(carriers: string[]) {
  const reaper = { runPass: jest.fn(async () => []) };
  const reconciler = { runPass: jest.fn(async () => 0) };
  const analysis = { startDue: jest.fn(async () => []), stop: jest.fn(async () => undefined) };
  const refresher = { runPass: jest.fn(async () => ({ slots: 0, days: 0 })) };
  const runner = new CallsRunner(
    reaper as unknown as CallReaper,
    reconciler as unknown as CarrierReconciler,
    analysis as unknown as PostCallAnalysis,
    { names: carriers } as unknown as CarrierRegistry,
    refresher as unknown as CallAnalyticsRefresher,
  );
  return { runner, reaper, reconciler, analysis, refresher };
}

describe('CallsRunner', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('runs the reaper, the carrier reconciler, the post-call worker and the analytics refresher on their periods until shutdown, then hands analyses back', async () => {
    const { runner, reaper, reconciler, analysis, refresher } = runnerWith(['twilio']);
    runner.onApplicationBootstrap();
    await jest.advanceTimersByTimeAsync(REAPER_PASS_MS);
    expect(reaper.runPass).toHaveBeenCalledTimes(1);
    expect(reconciler.runPass).toHaveBeenCalledTimes(REAPER_PASS_MS / RECONCILE_PASS_MS);
    expect(analysis.startDue).toHaveBeenCalledTimes(REAPER_PASS_MS / POST_CALL_POLL_MS);
    expect(refresher.runPass).toHaveBeenCalledTimes(Math.floor(REAPER_PASS_MS / ANALYTICS_REFRESH_PASS_MS));

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
