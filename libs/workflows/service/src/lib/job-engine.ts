import { PgBoss } from 'pg-boss';
import type { Clock, Job, JobResult } from 'pg-boss';
import { EntityManager } from 'typeorm';
import { serviceLogger } from '@parley/observability';

/** pg-boss's own tables live in this schema, beside (not inside) the workflows service's. */
export const JOBS_SCHEMA = 'workflow_jobs';
export const DISPATCH_QUEUE = 'workflow-dispatch';
const DUE_NOW_MARGIN_MS = 1000;
/**
 * Due dispatches one worker takes at once: decided in one transaction (one line lock per account for all of them),
 * their calls then placed side by side (bench/workflows.mjs: docs/workflows-bench.md).
 */
export const DISPATCH_BATCH_SIZE = 8;

/** A recipient to look at once its time has come: its due time, a calling window's opening, a retry, a free line. */
export interface DispatchJob {
  recipient_id: string;
}

/**
 * Handles several due dispatches at once; answers, in the same order, whether each was done (a rejected one is
 * retried on its own, with the queue's back-off). Throwing retries them all.
 */
export type DispatchHandler = (jobs: DispatchJob[]) => Promise<PromiseSettledResult<unknown>[]>;

export const WORKFLOW_JOBS = Symbol('WORKFLOW_JOBS');

/** The durable timers the dispatcher runs on. */
export interface WorkflowJobs {
  /** Schedules dispatches inside the caller's transaction: they exist if and only if it commits. */
  schedule(m: EntityManager, jobs: { recipientId: string; at: Date }[]): Promise<void>;
  /** Starts handling due dispatches on this replica (several replicas share them). */
  work(handler: DispatchHandler): Promise<void>;
  stop(): Promise<void>;
}

export interface JobEngineOptions {
  connectionString: string;
  /** Dispatches this replica handles at once: `concurrency / batchSize` workers, each fetching up to `batchSize` due jobs. */
  concurrency: number;
  /** Due jobs one fetch hands the handler together (default 1). */
  batchSize?: number;
  /** A test clock (pg-boss's TestClock) moves pg-boss's time, in JavaScript and in PostgreSQL, by hand. */
  clock?: Clock;
}

/**
 * The workflows' durable timers on pg-boss (PostgreSQL only, so identical on the embedded and an external
 * database). A job only says "look at this recipient now"; what happens is decided from the recipient's row, so a
 * job that runs twice (a retried job, a replica that died mid-job) finds the work done or in hand and does nothing
 * new. Failed handlers are retried with back-off; LISTEN/NOTIFY wakes workers as soon as a job is due now, and
 * delayed jobs are polled for every half second (pg-boss's shortest interval).
 */
export class PgBossJobs implements WorkflowJobs {
  private readonly boss: PgBoss;
  private readonly log = serviceLogger('workflow-jobs');
  private started: Promise<void> | undefined;

  constructor(private readonly options: JobEngineOptions) {
    this.boss = new PgBoss({
      connectionString: options.connectionString,
      schema: JOBS_SCHEMA,
      max: Math.max(4, Math.min(options.concurrency, 10)),
      application_name: 'parley-workflow-jobs',
      useListenNotify: true,
      ...(options.clock ? { clock: options.clock } : {}),
    });
    this.boss.on('error', (error) => this.log.error({ err: error }, 'job engine error'));
  }

  /** Installs or migrates pg-boss's schema and the dispatch queue (idempotent; replicas may start together). */
  start(): Promise<void> {
    this.started ??= (async () => {
      await this.boss.start();
      await this.boss.createQueue(DISPATCH_QUEUE, { retryLimit: 30, retryDelay: 1, retryBackoff: true, retryDelayMax: 60, expireInSeconds: 120, notify: true });
    })();
    return this.started;
  }

  async schedule(m: EntityManager, jobs: { recipientId: string; at: Date }[]): Promise<void> {
    if (!jobs.length) return;
    await this.start();
    // pg-boss writes through the caller's connection (TypeORM's structured result gives the rows of any command).
    const runner = m.queryRunner;
    if (!runner) throw new Error('schedule needs a transaction’s entity manager');
    const db = { executeSql: async (text: string, values?: unknown[]) => ({ rows: (await runner.query(text, values, true)).records }) };
    const now = this.options.clock?.now() ?? Date.now();
    await this.boss.insert(
      DISPATCH_QUEUE,
      // Due now: a start time a second back, so pg-boss notifies workers at once. The time taken here can read as
      // future to the database (its now() is the transaction's start, its clock may lag ours), and such a job would
      // wait for the next poll.
      jobs.map((j) => ({ data: { recipient_id: j.recipientId } satisfies DispatchJob, startAfter: j.at.getTime() > now ? j.at : new Date(now - DUE_NOW_MARGIN_MS) })),
      { db },
    );
  }

  async work(handler: DispatchHandler): Promise<void> {
    await this.start();
    const batchSize = Math.max(1, Math.min(this.options.batchSize ?? 1, this.options.concurrency));
    await this.boss.work<DispatchJob>(
      DISPATCH_QUEUE,
      {
        localConcurrency: Math.max(1, Math.ceil(this.options.concurrency / batchSize)),
        batchSize,
        // Each job of a batch settles on its own: one whose call could not be placed is retried, the others not.
        perJobResults: true,
        // A worker whose fetch came back full fetches again at once. Without it every worker waits out the poll
        // interval after each batch (NOTIFY wakes only on new jobs): 16 workers × 1 job / 0.5 s was the flat 32
        // dispatches/s of a backlog (docs/workflows-bench.md).
        burstWhenBatchFull: true,
        pollingIntervalSeconds: 0.5,
        notifyPollingIntervalSeconds: 0.5,
      },
      async (jobs: Job<DispatchJob>[]): Promise<JobResult[]> => {
        const results = await handler(jobs.map((j) => j.data));
        return jobs.map((j, i) => {
          const r = results[i];
          if (r?.status === 'fulfilled') return { id: j.id, status: 'completed' };
          const reason: unknown = r?.status === 'rejected' ? r.reason : new Error('no result for this job');
          return { id: j.id, status: 'failed', output: { message: reason instanceof Error ? reason.message : String(reason) } };
        });
      },
    );
  }

  /** Lets the jobs in hand finish (up to 10 s), then closes pg-boss's pool. */
  async stop(): Promise<void> {
    if (!this.started) return;
    await this.started.catch(() => undefined);
    await this.boss.stop({ graceful: true, timeout: 10_000, close: true });
  }

  /** The pg-boss instance (tests attach their TestClock through it). */
  get engine(): PgBoss {
    return this.boss;
  }
}
