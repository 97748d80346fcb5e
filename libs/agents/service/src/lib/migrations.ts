import { MigrationInterface, QueryRunner } from 'typeorm';
import { BusDeadLetters1764200000000, CreateOutbox1763700000000 } from '@parley/messaging';

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

/** The whole agent becomes one document; groups arrive. Existing agents keep their fields inside the document. */
export class AgentDocumentsAndGroups1763700000002 implements MigrationInterface {
  name = 'AgentDocumentsAndGroups1763700000002';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agents ADD COLUMN IF NOT EXISTS spec jsonb`);
    await q.query(`ALTER TABLE agents ADD COLUMN IF NOT EXISTS group_id text`);
    await q.query(`
      UPDATE agents SET spec = jsonb_build_object('name', name, 'description', description, 'languages', languages, 'metadata', metadata)
       WHERE spec IS NULL`);
    await q.query(`ALTER TABLE agents ALTER COLUMN spec SET NOT NULL`);
    await q.query(`ALTER TABLE agents DROP COLUMN IF EXISTS description, DROP COLUMN IF EXISTS languages, DROP COLUMN IF EXISTS metadata`);
    await q.query(`CREATE INDEX IF NOT EXISTS agents_group ON agents (account_id, group_id) WHERE deleted_at IS NULL`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS agent_groups (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        spec jsonb NOT NULL,
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS agent_groups_listing ON agent_groups (account_id, created_at DESC, id DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS agent_groups`);
  }
}

/**
 * Projects (docs/projects.md): an agent belongs to one, fixed at creation; null on agents stored before projects (the
 * account's default project). Counted per project (max_agents) under the account's lock.
 */
export class AddAgentProjects1765500000003 implements MigrationInterface {
  name = 'AddAgentProjects1765500000003';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agents ADD COLUMN IF NOT EXISTS project_id text`);
    await q.query(`CREATE INDEX IF NOT EXISTS agents_project ON agents (account_id, project_id, created_at DESC, id DESC) WHERE deleted_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS agents_project`);
    await q.query(`ALTER TABLE agents DROP COLUMN IF EXISTS project_id`);
  }
}

/** The projects whose max_agents was reported reached (project.limit_reached), until an agent is created under it. */
export class AddProjectLimitReports1765500000004 implements MigrationInterface {
  name = 'AddProjectLimitReports1765500000004';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS project_limits_reported (project_id text PRIMARY KEY, account_id text NOT NULL, reported_at timestamptz(3) NOT NULL DEFAULT now())`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS project_limits_reported`);
  }
}

export const AGENTS_MIGRATIONS = [CreateOutbox1763700000000, CreateAgents1763700000001, AgentDocumentsAndGroups1763700000002, BusDeadLetters1764200000000, AddAgentProjects1765500000003, AddProjectLimitReports1765500000004];
