import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { LIVE, MediaLoadReport } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { Bus } from '@parley/messaging';
import { serviceLogger } from '@parley/observability';
import { AppError } from '@parley/rpc';
import { BUS, CONFIG } from '@parley/runtime';
import { callAdmissions, callSetupsInFlight, callSetupsWaiting, mediaCapacityFree, mediaWorkersReporting } from './admission-metrics';
import { CallsRepository } from './calls.repository';
import { SetupLimiter } from './setup-limiter';

export type RefusalReason = 'setup_queue' | 'deadline' | 'media_capacity' | 'media_load' | 'no_media_worker';

/** Seconds a refused client should wait: set-ups free up within a second, media capacity only as calls end. */
const RETRY_AFTER_SECONDS: Record<RefusalReason, number> = {
  setup_queue: 1,
  deadline: 1,
  media_capacity: 5,
  media_load: 5,
  no_media_worker: 5,
};

/** A media worker's report is current for this many of its intervals; after that the worker counts as gone. */
const STALE_AFTER_INTERVALS = 3;

export type MediaWorkerLoad = Pick<MediaLoadReport, 'streams' | 'capacity' | 'event_loop_utilization' | 'draining'>;

export interface AdmissionInput {
  /** Current reports, one per media worker. */
  workers: MediaWorkerLoad[];
  /** Whether any worker ever reported to this calls service (none ever: a deployment without load reports). */
  workersEverSeen: boolean;
  /** Calls placed but not yet answered (queued, ringing, being set up): each may need a stream any moment. */
  reserved: number;
  /** Event-loop utilization (0-1) above which a worker takes no new calls. */
  maxLoad: number;
}

export type AdmissionDecision = { admit: true; free: number | undefined } | { admit: false; reason: RefusalReason; detail: string; free: number | undefined };

/**
 * Whether the media plane can carry one more call, decided before anything is dialled (a worker near its limit
 * stops taking jobs, as LiveKit's do). Capacity is that of the workers that accept calls (current report, not
 * draining, event loop under `maxLoad`); it must exceed their open streams plus the calls already placed. Until a
 * worker has ever reported there is nothing to decide from, and calls are admitted.
 */
export function decideAdmission(input: AdmissionInput): AdmissionDecision {
  if (input.workers.length === 0) {
    if (!input.workersEverSeen) return { admit: true, free: undefined };
    return { admit: false, reason: 'no_media_worker', detail: 'No media worker is reporting: calls could not be answered.', free: 0 };
  }
  const accepting = input.workers.filter((w) => !w.draining && w.event_loop_utilization <= input.maxLoad);
  if (accepting.length === 0) {
    const overloaded = input.workers.some((w) => !w.draining);
    return overloaded
      ? { admit: false, reason: 'media_load', detail: 'Every media worker is at its load limit.', free: 0 }
      : { admit: false, reason: 'no_media_worker', detail: 'Every media worker is shutting down.', free: 0 };
  }
  const free = accepting.reduce((sum, w) => sum + Math.max(0, w.capacity - w.streams), 0) - input.reserved;
  if (free <= 0) return { admit: false, reason: 'media_capacity', detail: 'The media workers are at capacity with live and placed calls.', free };
  return { admit: true, free };
}

/** A 503 that promises nothing was dialled: it carries `retry_after_seconds` (the gateway's sign of a safe retry). */
export function refusedBeforeDialling(message: string, retryAfterSeconds: number): AppError {
  return new AppError('service_unavailable', `${message} Nothing was dialled; retry after ${retryAfterSeconds} s.`, undefined, {
    retry_after_seconds: retryAfterSeconds,
  });
}

export function refusal(reason: RefusalReason, detail: string): AppError {
  callAdmissions.inc({ outcome: 'refused', reason });
  return refusedBeforeDialling(detail, RETRY_AFTER_SECONDS[reason]);
}

/** An admitted set-up: its place in the limiter and its reservation of media capacity until the call is recorded. */
export interface AdmissionTicket {
  /** The call is committed: from now on it is counted among the placed calls in the database. */
  recorded(): void;
  /** The set-up is over (dialled, refused by the carrier, or abandoned): its place goes to the next. */
  release(): void;
}

interface WorkerState {
  report: MediaLoadReport;
  receivedAt: number;
}

/**
 * Admission control of outbound calls in the calls service: a bounded number of set-ups at once with a bounded
 * queue wait (the calls service's own load), then the media plane's capacity from the load every media worker
 * broadcasts on LIVE.mediaLoad (over the Bus, so it works whichever process or machine carries the audio).
 */
@Injectable()
export class CallAdmission implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = serviceLogger('calls');
  private readonly limiter: SetupLimiter;
  private readonly workers = new Map<string, WorkerState>();
  private workersEverSeen = false;
  /** Admitted set-ups whose call is not committed yet (the database count does not include them). */
  private unrecorded = 0;
  private deciding: Promise<void> = Promise.resolve();
  private stopListening: (() => void) | undefined;

  constructor(
    @Inject(BUS) private readonly bus: Bus,
    private readonly calls: CallsRepository,
    @Inject(CONFIG) private readonly config: ServiceConfig,
  ) {
    this.limiter = new SetupLimiter(config.CALL_SETUP_CONCURRENCY);
  }

  async onApplicationBootstrap(): Promise<void> {
    this.stopListening = await this.bus.listen(LIVE.mediaLoad.name, (payload) => this.observe(payload as MediaLoadReport));
  }

  onApplicationShutdown(): void {
    this.stopListening?.();
  }

  observe(report: MediaLoadReport, receivedAt = Date.now()): void {
    if (!report?.worker_id) return;
    this.workers.set(report.worker_id, { report, receivedAt });
    this.workersEverSeen = true;
  }

  /**
   * Admits one set-up that must have started dialling by `answerBy` (epoch ms), or throws a 503 with Retry-After.
   * Waits at most CALL_SETUP_QUEUE_MS (and never past `answerBy`) for a place.
   */
  async admit(answerBy: number): Promise<AdmissionTicket> {
    const left = answerBy - Date.now();
    if (left <= 0) throw refusal('deadline', 'The request’s deadline passed before its call could be set up.');
    const release = await this.limiter.acquire(Math.min(this.config.CALL_SETUP_QUEUE_MS, left));
    this.gauges();
    if (!release) throw refusal('setup_queue', 'Too many calls are being set up at once.');
    try {
      await this.oneDecisionAtATime(() => this.decide());
    } catch (error) {
      release();
      this.gauges();
      throw error;
    }
    callAdmissions.inc({ outcome: 'admitted', reason: '' });
    let recorded = false;
    const record = () => {
      if (recorded) return;
      recorded = true;
      this.unrecorded -= 1;
    };
    return {
      recorded: record,
      release: () => {
        record();
        release();
        this.gauges();
      },
    };
  }

  /**
   * Admits (counting the set-up as unrecorded) or throws. The set-ups not yet recorded are read before the count
   * of recorded ones: one recorded meanwhile is then counted twice rather than not at all, so capacity is never
   * overshot; decisions run one at a time so none is admitted between the two reads.
   */
  private async decide(): Promise<void> {
    const workers = this.currentWorkers();
    const unrecorded = this.unrecorded;
    const reserved = workers.length ? (await this.calls.countPlacedNotAnswered()) + unrecorded : 0;
    const decision = decideAdmission({ workers, workersEverSeen: this.workersEverSeen, reserved, maxLoad: this.config.MEDIA_WORKER_MAX_LOAD_PERCENT / 100 });
    if (decision.free !== undefined) mediaCapacityFree.set(decision.free);
    if (!decision.admit) throw refusal(decision.reason, decision.detail);
    this.unrecorded += 1;
  }

  private oneDecisionAtATime(run: () => Promise<void>): Promise<void> {
    const decided = this.deciding.then(run);
    this.deciding = decided.catch(() => undefined);
    return decided;
  }

  private currentWorkers(): MediaWorkerLoad[] {
    const now = Date.now();
    const current: MediaWorkerLoad[] = [];
    const states = { accepting: 0, overloaded: 0, draining: 0 };
    for (const [id, { report, receivedAt }] of this.workers) {
      if (now - receivedAt > STALE_AFTER_INTERVALS * report.report_every_ms) {
        this.workers.delete(id);
        this.log.warn({ worker: id }, 'media worker stopped reporting its load; its capacity is no longer counted');
        continue;
      }
      current.push(report);
      const overloaded = report.event_loop_utilization > this.config.MEDIA_WORKER_MAX_LOAD_PERCENT / 100;
      states[report.draining ? 'draining' : overloaded ? 'overloaded' : 'accepting'] += 1;
    }
    for (const [state, count] of Object.entries(states)) mediaWorkersReporting.set({ state }, count);
    return current;
  }

  private gauges(): void {
    callSetupsInFlight.set(this.limiter.inFlight);
    callSetupsWaiting.set(this.limiter.waiting);
  }
}
