import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Projects (docs/projects.md): partitions of an account, each with its ceilings (null: none). The gateway owns them;
 * the services store each resource's project and enforce the ceilings the gateway hands them. An account's default
 * project (`is_default`, id derived from the account: defaultProjectId) is created when first needed.
 */
export class CreateProjects1765500000104 implements MigrationInterface {
  name = 'CreateProjects1765500000104';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS projects (
        id text PRIMARY KEY,
        account_id text NOT NULL REFERENCES accounts(id),
        name text NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}',
        is_default boolean NOT NULL DEFAULT false,
        max_live_calls int CHECK (max_live_calls > 0),
        max_agents int CHECK (max_agents > 0),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS projects_account ON projects (account_id, created_at DESC, id DESC)`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS projects_one_default ON projects (account_id) WHERE is_default`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS projects`);
  }
}

/** A project's spending ceiling (docs/projects.md): `spend_amount` in `spend_currency` per `spend_period`; null: none. */
export class AddProjectSpend1765500000105 implements MigrationInterface {
  name = 'AddProjectSpend1765500000105';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE projects
        ADD COLUMN IF NOT EXISTS spend_amount numeric CHECK (spend_amount > 0),
        ADD COLUMN IF NOT EXISTS spend_currency text,
        ADD COLUMN IF NOT EXISTS spend_period text CHECK (spend_period IN ('day', 'month'))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE projects DROP COLUMN IF EXISTS spend_amount, DROP COLUMN IF EXISTS spend_currency, DROP COLUMN IF EXISTS spend_period`);
  }
}

/** A project's ceiling on its webhook endpoints (docs/projects.md); null: none. */
export class AddProjectWebhookCeiling1765500000106 implements MigrationInterface {
  name = 'AddProjectWebhookCeiling1765500000106';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE projects ADD COLUMN IF NOT EXISTS max_webhook_endpoints int CHECK (max_webhook_endpoints > 0)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE projects DROP COLUMN IF EXISTS max_webhook_endpoints`);
  }
}
