import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { serviceLogger } from '@parley/observability';
import { untraced } from '@parley/tracing';
import { DeliveryEngine } from './delivery.engine';

/** How long the loop waits after a pass that claimed nothing, unless work arrives meanwhile. */
const IDLE_MS = 200;

/**
 * The delivery loop of this replica, started and stopped with the service: a pass of the engine runs at once when
 * work arrives (an event fanned out, an attempt freed a place), again right after a pass that claimed something,
 * and otherwise every IDLE_MS. Passes never overlap.
 */
@Injectable()
export class DeliveryRunner implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = serviceLogger('webhook-dispatcher');
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(private readonly engine: DeliveryEngine) {}

  onApplicationBootstrap(): void {
    this.engine.whenWorkArrives(() => this.nudge());
    this.schedule(0);
  }

  /** Stops the loop, then waits for the pass running and the attempts in flight to be recorded. */
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    await this.engine.drain();
  }

  private nudge(): void {
    if (this.stopped) return;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    // Untraced: woken by a consumer's fan-out, the loop would otherwise run every later pass in that event's trace.
    this.timer = setTimeout(untraced(() => {
      // The loop does not wait for attempts: the next pass claims more while they run (leases and the
      // per-endpoint limit keep it bounded), so one slow receiver does not hold up the others.
      this.running = this.engine
        .pass({ wait: false })
        .then((n) => {
          if (n > 0) this.again = true;
        })
        .catch((error) => this.log.warn({ err: error }, 'delivery pass failed'))
        .finally(() => {
          this.running = undefined;
          const more = this.again;
          this.again = false;
          this.schedule(more ? 0 : IDLE_MS);
        });
    }), ms);
  }
}
