import { MigrationInterface, QueryRunner } from 'typeorm';
import { Counter } from 'prom-client';

/** The `consumer` of a dead letter the outbox relay parked (a message the bus kept refusing). */
export const OUTBOX_CONSUMER = 'outbox';

export const busDeadLettersTotal = new Counter({
  name: 'parley_bus_dead_letters_total',
  help: 'Messages parked in a service dead_letters table, by the consumer (outbox = the relay) that gave up on them',
  labelNames: ['service', 'consumer'] as const,
});

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
