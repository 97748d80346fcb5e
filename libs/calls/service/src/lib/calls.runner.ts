import { BeforeApplicationShutdown, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { ANALYTICS_REFRESH_PASS_MS, CallAnalyticsRefresher } from './call-analytics-refresher';
import { CallReaper, REAPER_PASS_MS } from './call-reaper';
import { CarrierReconciler, RECONCILE_PASS_MS } from './carrier-reconciler';
import { CarrierRegistry } from './carrier-registry';
import { startPasses } from './periodic-pass';
import { POST_CALL_POLL_MS, PostCallAnalysis } from './post-call-analysis';

/**
 * The calls service's background work, started with the service and stopped with it: the stuck-call reaper, the
 * carrier reconciler (when a carrier is configured), the post-call worker and the analytics refresher, each on its
 * own period.
 */
@Injectable()
export class CallsRunner implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private stops: (() => void)[] = [];

  constructor(
    private readonly reaper: CallReaper,
    private readonly reconciler: CarrierReconciler,
    private readonly analysis: PostCallAnalysis,
    private readonly carriers: CarrierRegistry,
    private readonly analytics: CallAnalyticsRefresher,
  ) {}

  onApplicationBootstrap(): void {
    this.stops = [
      startPasses('reaper', REAPER_PASS_MS, () => this.reaper.runPass()),
      ...(this.carriers.names.length ? [startPasses('carrier reconciliation', RECONCILE_PASS_MS, () => this.reconciler.runPass())] : []),
      // A pass ends once its calls are claimed, not analysed: the next one fills the slots that free up meanwhile.
      startPasses('post-call', POST_CALL_POLL_MS, () => this.analysis.startDue()),
      startPasses('analytics refresh', ANALYTICS_REFRESH_PASS_MS, () => this.analytics.runPass()),
    ];
  }

  /** Before the database closes: analyses in flight are handed back (see PostCallAnalysis.stop). */
  async beforeApplicationShutdown(): Promise<void> {
    for (const stop of this.stops) stop();
    this.stops = [];
    await this.analysis.stop();
  }
}
