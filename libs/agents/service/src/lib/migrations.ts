import { MigrationInterface, QueryRunner } from 'typeorm';
import { CreateOutbox1763700000000 } from '@parley/messaging';

export class CreateAgents1763700000001 implements MigrationInterface {
  name = 'CreateAgents1763700000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS agents (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        languages jsonb NOT NULL DEFAULT '[]',
        metadata jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL,
        deleted_at timestamptz(3)
      )`);
    await q.query(
      `CREATE INDEX IF NOT EXISTS agents_account_listing ON agents (account_id, created_at DESC, id DESC) WHERE deleted_at IS NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS agents`);
  }
}

export const AGENTS_MIGRATIONS = [CreateOutbox1763700000000, CreateAgents1763700000001];
