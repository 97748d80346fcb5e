import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateAccountsAndKeys1763700000101 implements MigrationInterface {
  name = 'CreateAccountsAndKeys1763700000101';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS accounts (
        id text PRIMARY KEY,
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS api_keys (
        id text PRIMARY KEY,
        account_id text NOT NULL REFERENCES accounts(id),
        role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
        secret_hash text NOT NULL UNIQUE,
        hint text NOT NULL,
        name text NOT NULL DEFAULT '',
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        expires_at timestamptz(3),
        revoked_at timestamptz(3),
        last_used_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS api_keys_account ON api_keys (account_id, created_at DESC, id DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS api_keys`);
    await q.query(`DROP TABLE IF EXISTS accounts`);
  }
}

/**
 * A key scoped to a project (docs/projects.md): null is account-wide. No foreign key: a project with live keys scoped
 * to it is not deleted (409), and a revoked key keeps naming its deleted project as history.
 */
export class AddApiKeyProject1765800000107 implements MigrationInterface {
  name = 'AddApiKeyProject1765800000107';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS project_id text`);
    await q.query(`CREATE INDEX IF NOT EXISTS api_keys_project ON api_keys (account_id, project_id) WHERE project_id IS NOT NULL AND revoked_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS api_keys_project`);
    await q.query(`ALTER TABLE api_keys DROP COLUMN IF EXISTS project_id`);
  }
}
