import { Column, CreateDateColumn, DataSource, Entity, EntityManager, Index, MigrationInterface, PrimaryGeneratedColumn, QueryRunner } from 'typeorm';
import { REQUEST_ID_HEADER, Subject } from '@parley/contracts';
import { currentRequestId, serviceLogger } from '@parley/observability';
import { traceHeaders, untraced } from '@parley/tracing';
import { Bus } from './bus';
import { DeadLetter, DeadLetterStore, OUTBOX_CONSUMER } from './dead-letters';

/** A message written in the same transaction as the change that caused it, then relayed to the bus. */
@Entity({ name: 'outbox' })
@Index('outbox_pending', ['nextAttemptAt'], { where: 'published_at IS NULL' })
export class OutboxRecord {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  seq: string;

  @Column({ name: 'message_id', type: 'text', unique: true })
  messageId: string;

  @Column({ type: 'text' })
  subject: string;

  @Column({ type: 'jsonb' })
  payload: unknown;

  @Column({ type: 'jsonb', default: {} })
  headers: Record<string, string>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', default: () => 'now()' })
  nextAttemptAt: Date;

  @Column({ name: 'published_at', type: 'timestamptz', nullable: true })
  publishedAt: Date | null;

  @Column({ type: 'int', default: 0 })
  attempts: number;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  /** Failed publishes in passes where the bus published other rows (added by BusDeadLetters1764200000000). */
  @Column({ name: 'poison_strikes', type: 'int', default: 0 })
  poisonStrikes: number;
}

/** The outbox table; every service that publishes lists this migration among its own. */
export class CreateOutbox1763700000000 implements MigrationInterface {
  name = 'CreateOutbox1763700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS outbox (
        seq bigserial PRIMARY KEY,
        message_id text NOT NULL UNIQUE,
        subject text NOT NULL,
        payload jsonb NOT NULL,
        headers jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        published_at timestamptz,
        attempts int NOT NULL DEFAULT 0,
        last_error text
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (next_attempt_at) WHERE published_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS outbox`);
  }
}

/** Adds a message to the outbox inside the caller's transaction. */
export async function enqueueOutbox<P>(manager: EntityManager, subject: Subject<P>, payload: P, messageId: string): Promise<void> {
  const requestId = currentRequestId();
  await manager.insert(OutboxRecord, {
    messageId,
    subject: subject.name,
    payload: payload as object,
    // The writer's trace context is stored with the row: published later by the relay, the message still joins it.
    headers: { ...traceHeaders(), ...(requestId ? { [REQUEST_ID_HEADER]: requestId } : {}) },
  });
}

const RETRY_DELAYS_MS = [500, 2000, 10000, 30000];

/**
 * Failed publishes, each in a pass where NATS published other rows, after which a row is parked: the bus is
 * healthy and refuses this row (a payload over NATS's max_payload, say), so retrying it is pointless. A failure
 * while nothing else publishes (an outage, or no other traffic) is never counted, so an outage parks nothing.
 */
export const OUTBOX_POISON_STRIKES = 5;
const REPLAY_POLL_MS = 5_000;

/**
 * Moves outbox records to the bus. Runs in every replica: rows are claimed with FOR UPDATE SKIP LOCKED, so
 * replicas share the work without publishing a row twice at once. A failed publish is retried with back-off;
 * a row is marked published only after the bus acknowledged it. A poison row (OUTBOX_POISON_STRIKES) moves to
 * dead_letters with the bus's error, counted in parley_bus_dead_letters_total{consumer="outbox"}; one an
 * operator marks with replay_requested_at moves back into the outbox and is published again. A pass runs at once
 * when nudged (after a commit of this replica) and otherwise every pollMs, doubling after each pass that found
 * nothing up to idlePollMs: an idle platform's relays cost its database a transaction every 2 s each, not four a second.
 */
export class OutboxRelay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  /** The wait before the next poll: pollMs, doubled after each pass that found nothing, up to idlePollMs. */
  private wait: number;
  private stopped = false;
  private lastCleanup = 0;
  private lastReplayPoll = 0;
  private readonly log = serviceLogger('outbox-relay');
  private readonly deadLetters: DeadLetterStore;
  private readonly replayTo = new Map([[OUTBOX_CONSUMER, (letter: DeadLetter) => this.requeue(letter)]]);

  constructor(
    private readonly dataSource: DataSource,
    private readonly bus: Bus,
    private readonly options: {
      pollMs?: number;
      /** The longest wait between polls while they find nothing (default 8 × pollMs); a nudge or a find resets it. */
      idlePollMs?: number;
      batchSize?: number;
      retainPublishedMs?: number;
      /** The metric's `service` label. */
      service?: string;
      poisonStrikes?: number;
      replayPollMs?: number;
    } = {},
  ) {
    this.deadLetters = new DeadLetterStore(dataSource, options.service ?? '');
    this.wait = this.pollMs;
  }

  private get pollMs(): number {
    return this.options.pollMs ?? 250;
  }

  start(): void {
    this.schedule(0);
  }

  /** Asks for a pass now (after a local commit) instead of waiting for the next poll. */
  nudge(): void {
    if (this.stopped) return;
    this.wait = this.pollMs;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    // Untraced: a nudge from a request would otherwise put this pass and every later one in the request's trace.
    this.timer = setTimeout(untraced(() => {
      let found = true;
      this.running = this.pass()
        .then((handled) => void (found = handled > 0))
        .catch((error) => this.log.warn({ err: error }, 'outbox pass failed'))
        .finally(() => {
          this.running = undefined;
          const more = this.again;
          this.again = false;
          // A relay at rest polls less and less often: its own commits nudge it, so a poll finds only rows due for a
          // retry or left by a replica that stopped before publishing them. Each poll is a transaction.
          const wait = found ? this.pollMs : this.wait;
          this.wait = found ? this.pollMs : Math.min(this.wait * 2, this.options.idlePollMs ?? 8 * this.pollMs);
          this.schedule(more ? 0 : wait);
        });
    }), ms);
  }

  /** Publishes one batch; returns how many records were handled. */
  async pass(): Promise<number> {
    const batchSize = this.options.batchSize ?? 200;
    const parked: OutboxRecord[] = [];
    const handled = await this.dataSource.transaction(async (manager) => {
      const rows: OutboxRecord[] = await manager
        .createQueryBuilder(OutboxRecord, 'o')
        .where('o.published_at IS NULL AND o.next_attempt_at <= now()')
        .orderBy('o.seq')
        .limit(batchSize)
        .setLock('pessimistic_write')
        .setOnLocked('skip_locked')
        .getMany();
      const results = await Promise.allSettled(
        rows.map((r) => this.bus.publish(r.subject, r.payload, { id: r.messageId, headers: r.headers, deliveryCount: r.attempts + 1 })),
      );
      const published = rows.filter((_, i) => results[i].status === 'fulfilled').map((r) => r.seq);
      if (published.length) {
        await manager.query(`UPDATE outbox SET published_at = now(), attempts = attempts + 1 WHERE seq = ANY($1)`, [published]);
      }
      for (const [i, r] of rows.entries()) {
        const result = results[i];
        if (result.status === 'fulfilled') continue;
        const error = String((result.reason as Error)?.message ?? result.reason).slice(0, 500);
        // On the in-process bus a failed publish is a consumer's failed handler, which the consumer bounds itself.
        const strikes = r.poisonStrikes + (published.length && this.bus.kind === 'nats' ? 1 : 0);
        if (strikes >= (this.options.poisonStrikes ?? OUTBOX_POISON_STRIKES)) {
          const letter = { id: r.messageId, subject: r.subject, payload: r.payload, headers: r.headers, deliveries: r.attempts + 1 };
          await this.deadLetters.park(OUTBOX_CONSUMER, letter, error, manager);
          await manager.query(`DELETE FROM outbox WHERE seq = $1`, [r.seq]);
          parked.push({ ...r, lastError: error });
          continue;
        }
        const delay = RETRY_DELAYS_MS[Math.min(r.attempts, RETRY_DELAYS_MS.length - 1)];
        await manager.query(
          `UPDATE outbox SET attempts = attempts + 1, poison_strikes = $4, last_error = $2, next_attempt_at = now() + ($3 || ' milliseconds')::interval WHERE seq = $1`,
          [r.seq, error, String(delay), strikes],
        );
      }
      return rows.length;
    });
    for (const r of parked) {
      this.deadLetters.count(OUTBOX_CONSUMER);
      this.log.error({ message_id: r.messageId, subject: r.subject, reason: r.lastError }, 'outbox row parked in dead_letters: the bus kept refusing it while publishing others');
    }
    if (handled === batchSize) this.again = true;
    if (Date.now() - this.lastReplayPoll >= (this.options.replayPollMs ?? REPLAY_POLL_MS)) {
      this.lastReplayPoll = Date.now();
      if ((await this.deadLetters.replay(this.replayTo)) > 0) this.again = true;
    }
    if (Date.now() - this.lastCleanup > 60_000) {
      this.lastCleanup = Date.now();
      // Published rows are kept a while for inspection, then dropped so the table stays small.
      await this.dataSource.query(
        `DELETE FROM outbox WHERE published_at < now() - ($1 || ' milliseconds')::interval`,
        [String(this.options.retainPublishedMs ?? 3_600_000)],
      );
    }
    return handled;
  }

  /** A replayed dead letter goes back into the outbox, to be published with its original message id. */
  private async requeue(letter: DeadLetter): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO outbox (message_id, subject, payload, headers) VALUES ($1, $2, $3, $4)
       ON CONFLICT (message_id) DO UPDATE SET subject = $2, payload = $3, headers = $4, published_at = NULL, attempts = 0, poison_strikes = 0,
         last_error = NULL, next_attempt_at = now()`,
      [letter.id, letter.subject, JSON.stringify(letter.payload), JSON.stringify(letter.headers)],
    );
  }
}
