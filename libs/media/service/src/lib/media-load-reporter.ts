import { hostname } from 'node:os';
import { EventLoopUtilization, performance } from 'node:perf_hooks';
import { LIVE, MediaLoadReport } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { Bus } from '@parley/messaging';
import { serviceLogger } from '@parley/observability';

/**
 * Utilization is over this many report intervals (3 s by default): a second of call set-ups (ten calls a second
 * joining) is a burst the set-up limiter already bounds, not a worker near its limit. LiveKit's workers likewise
 * average their load over 2.5 s.
 */
const LOAD_WINDOW_REPORTS = 3;

/**
 * Tells call admission how loaded this worker is: every MEDIA_LOAD_REPORT_MS it broadcasts its open streams, its
 * configured capacity and the event-loop utilization of its process (the process that paces the audio) over the last
 * LOAD_WINDOW_REPORTS intervals on LIVE.mediaLoad. Over the Bus, so it reaches the calls service from a child process or another machine alike.
 * When the worker starts draining it says so at once, and its capacity stops counting.
 */
export class MediaLoadReporter {
  private readonly log = serviceLogger('media-worker');
  private readonly workerId = `${hostname()}/${process.pid}`;
  private timer: NodeJS.Timeout | undefined;
  /** The event loop's totals at the last reports, oldest first: the window utilization is measured over. */
  private readonly window: EventLoopUtilization[];

  constructor(
    private readonly bus: Bus,
    private readonly streams: () => number,
    private readonly config: Pick<ServiceConfig, 'MEDIA_WORKER_CAPACITY' | 'MEDIA_LOAD_REPORT_MS'>,
    /** The event loop's idle and active totals so far (tests give their own). */
    private readonly totals: () => EventLoopUtilization = () => performance.eventLoopUtilization(),
  ) {
    this.window = [this.totals()];
  }

  start(): void {
    this.publish(false);
    this.timer = setInterval(() => this.publish(false), this.config.MEDIA_LOAD_REPORT_MS);
    this.timer.unref();
  }

  /** The worker stops taking streams: the last report says so. */
  stop(): void {
    clearInterval(this.timer);
    this.publish(true);
  }

  /** This worker's load now; utilization is over the last LOAD_WINDOW_REPORTS reports' time. */
  report(draining: boolean): MediaLoadReport {
    const now = this.totals();
    const since = this.window[0];
    const active = now.active - since.active;
    const utilization = active / (active + now.idle - since.idle);
    this.window.push(now);
    if (this.window.length > LOAD_WINDOW_REPORTS) this.window.shift();
    return {
      worker_id: this.workerId,
      streams: this.streams(),
      capacity: this.config.MEDIA_WORKER_CAPACITY,
      event_loop_utilization: Number.isFinite(utilization) ? utilization : 0,
      draining,
      report_every_ms: this.config.MEDIA_LOAD_REPORT_MS,
    };
  }

  private publish(draining: boolean): void {
    this.bus.broadcast(LIVE.mediaLoad.name, this.report(draining)).catch((e) => this.log.warn({ err: e }, 'load report not sent'));
  }
}
