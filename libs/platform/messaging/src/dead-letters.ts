import { DataSource, EntityManager, MigrationInterface, QueryRunner } from 'typeorm';
import { Counter, Gauge } from 'prom-client';
import { BusMessage } from './bus';

/** The `consumer` of a dead letter the outbox relay parked (a message the bus kept refusing). */
export const OUTBOX_CONSUMER = 'outbox';

export const busDeadLettersTotal = new Counter({
  name: 'parley_bus_dead_letters_total',
  help: 'Messages parked in a service dead_letters table, by the consumer (outbox = the relay) that gave up on them',
  labelNames: ['service', 'consumer'] as const,
});

export const busDeadLettersWaiting = new Gauge({
  name: 'parley_bus_dead_letters',
  help: 'Messages parked in a service dead_letters table and not replayed yet, by consumer',
  labelNames: ['service', 'consumer'] as const,
});

/** A message as parked: what a replay hands to its consumer again. */
export type DeadLetter = Pick<BusMessage, 'id' | 'subject' | 'payload' | 'headers'> & { deliveries: number };

/**
 * A service's dead_letters table. The id is the table's default (the webhook dispatcher's older table has text ids),
 * so this code works with both shapes.
 */
export class DeadLetterStore {
  constructor(
    private readonly dataSource: DataSource,
    private readonly service: string,
  ) {}

  /**
   * Parks a message with the reason; a message parked again (after a failed replay, say) keeps one row, waiting
   * for another replay. Pass the manager of a transaction the parking belongs to; count() once it committed.
   */
  async park(consumer: string, letter: DeadLetter, error: unknown, manager: Pick<EntityManager, 'query'> = this.dataSource): Promise<string> {
    const reason = String((error as Error)?.message ?? error).slice(0, 1000);
    await manager.query(
      `INSERT INTO dead_letters (consumer, message_id, subject, payload, headers, reason, deliveries) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (consumer, message_id) DO UPDATE SET subject = $3, payload = $4, headers = $5, reason = $6,
         deliveries = dead_letters.deliveries + $7, parked_at = now(), replay_requested_at = NULL, replayed_at = NULL`,
      [consumer, letter.id, letter.subject, JSON.stringify(letter.payload), JSON.stringify(letter.headers), reason, letter.deliveries],
    );
    return reason;
  }

  count(consumer: string): void {
    busDeadLettersTotal.inc({ service: this.service, consumer });
  }

  /**
   * Hands the dead letters an operator asked to replay (replay_requested_at) to their consumer, each once: the
   * request is taken before the handler runs. One that fails again stays parked, its reason starting "replay
   * failed". Also sets the waiting gauge of these consumers.
   */
  async replay(consumers: ReadonlyMap<string, (letter: DeadLetter) => Promise<unknown>>): Promise<number> {
    const names = [...consumers.keys()];
    const requested: { id: string; consumer: string; message_id: string; subject: string; payload: string; headers: Record<string, string>; deliveries: number }[] =
      await this.dataSource.query(
        // Through a CTE: TypeORM answers a bare UPDATE with [rows, count].
        `WITH r AS (
           UPDATE dead_letters SET replay_requested_at = NULL
            WHERE id IN (SELECT id FROM dead_letters WHERE consumer = ANY($1) AND replay_requested_at IS NOT NULL ORDER BY parked_at LIMIT 100 FOR UPDATE SKIP LOCKED)
           RETURNING id, consumer, message_id, subject, payload, headers, deliveries
         )
         SELECT * FROM r`,
        [names],
      );
    for (const row of requested) {
      try {
        const handle = consumers.get(row.consumer) as (letter: DeadLetter) => Promise<unknown>;
        await handle({ id: row.message_id, subject: row.subject, payload: JSON.parse(row.payload), headers: row.headers, deliveries: row.deliveries });
        await this.dataSource.query(`UPDATE dead_letters SET replayed_at = now() WHERE id = $1`, [row.id]);
      } catch (error) {
        await this.dataSource.query(`UPDATE dead_letters SET reason = $2, replayed_at = NULL WHERE id = $1`, [row.id, `replay failed: ${String((error as Error)?.message ?? error).slice(0, 1000)}`]);
      }
    }
    const waiting: { consumer: string; n: number }[] = await this.dataSource.query(
      `SELECT consumer, count(*)::int AS n FROM dead_letters WHERE consumer = ANY($1) AND replayed_at IS NULL GROUP BY consumer`,
      [names],
    );
    for (const consumer of names) busDeadLettersWaiting.set({ service: this.service, consumer }, waiting.find((w) => w.consumer === consumer)?.n ?? 0);
    return requested.length;
  }
}

/**
 * A service's dead_letters table (messages parked with the reason instead of being retried forever; an operator
 * replays one by setting replay_requested_at) and the outbox's count of failures that happened while the bus was
 * publishing other rows (poison_strikes: what tells a poison row from an outage). Every service with an outbox
 * lists this migration after its own.
 */
export class BusDeadLetters1764200000000 implements MigrationInterface {
  name = 'BusDeadLetters1764200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE outbox ADD COLUMN IF NOT EXISTS poison_strikes int NOT NULL DEFAULT 0`);
    // The payload is kept as text, as the webhook dispatcher's: an operator may have to edit it before a replay.
    await q.query(`
      CREATE TABLE IF NOT EXISTS dead_letters (
        id bigserial PRIMARY KEY,
        consumer text NOT NULL,
        message_id text NOT NULL,
        subject text NOT NULL,
        payload text NOT NULL,
        headers jsonb NOT NULL DEFAULT '{}',
        reason text NOT NULL,
        deliveries int NOT NULL,
        parked_at timestamptz(3) NOT NULL DEFAULT now(),
        replay_requested_at timestamptz(3),
        replayed_at timestamptz(3),
        UNIQUE (consumer, message_id)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS dead_letters_replay ON dead_letters (consumer, replay_requested_at) WHERE replay_requested_at IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS dead_letters`);
    await q.query(`ALTER TABLE outbox DROP COLUMN IF EXISTS poison_strikes`);
  }
}
