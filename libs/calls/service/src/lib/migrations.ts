import { MigrationInterface, QueryRunner } from 'typeorm';
import { CreateOutbox1763700000000 } from '@parley/messaging';

export class CreateCalls1763700000301 implements MigrationInterface {
  name = 'CreateCalls1763700000301';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS calls (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        agent_id text NOT NULL,
        direction text NOT NULL CHECK (direction IN ('outbound', 'inbound', 'web')),
        to_number text NOT NULL,
        from_number text NOT NULL,
        status text NOT NULL CHECK (status IN ('queued', 'ringing', 'in_progress', 'ended', 'failed')),
        end_reason text,
        failure_reason text,
        carrier text,
        carrier_call_id text,
        variables jsonb NOT NULL DEFAULT '{}',
        metadata jsonb NOT NULL DEFAULT '{}',
        turns int NOT NULL DEFAULT 0,
        recording_available boolean NOT NULL DEFAULT false,
        transcript_available boolean NOT NULL DEFAULT false,
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL,
        answered_at timestamptz(3),
        ended_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS calls_listing ON calls (account_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX IF NOT EXISTS calls_live ON calls (account_id) WHERE status IN ('queued', 'ringing', 'in_progress')`);
    await q.query(`CREATE INDEX IF NOT EXISTS calls_stale ON calls (updated_at) WHERE status IN ('queued', 'ringing', 'in_progress')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS calls`);
  }
}

export const CALLS_MIGRATIONS = [CreateOutbox1763700000000, CreateCalls1763700000301];
