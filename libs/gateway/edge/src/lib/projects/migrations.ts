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
