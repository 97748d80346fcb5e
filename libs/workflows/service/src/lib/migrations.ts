import { MigrationInterface, QueryRunner } from 'typeorm';
import { BusDeadLetters1764200000000, CreateOutbox1763700000000 } from '@parley/messaging';

/**
 * Workflows, runs and recipients (schema `workflows`). A recipient's `state` is the service's own finer state;
 * the public one is derived (PUBLIC_STATE). `due_at` is when it is next due (pending, waiting, retrying); `attempt` counts
 * the calls placed, `retries` the retries taken per outcome (the retry policy's budget is per outcome).
 * The in-flight indexes make the concurrency checks (calls being placed or live, per run and per account) cheap.
 */
export class CreateWorkflows1765200000100 implements MigrationInterface {
  name = 'CreateWorkflows1765200000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS workflows (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        spec jsonb NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS workflows_account ON workflows (account_id, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS workflow_runs (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        workflow_id text NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
        status text NOT NULL,
        start_at timestamptz NOT NULL,
        started_at timestamptz,
        completed_at timestamptz,
        recipients_complete boolean NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS workflow_runs_workflow ON workflow_runs (workflow_id, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS workflow_recipients (
        id text PRIMARY KEY,
        seq bigserial NOT NULL,
        account_id text NOT NULL,
        run_id text NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
        to_number text NOT NULL,
        timezone text NOT NULL,
        variables jsonb NOT NULL DEFAULT '{}',
        metadata jsonb NOT NULL DEFAULT '{}',
        state text NOT NULL,
        attempt int NOT NULL DEFAULT 0,
        retries jsonb NOT NULL DEFAULT '{}',
        due_at timestamptz,
        last_outcome text,
        last_end_reason text,
        reason text,
        call_ids text[] NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS workflow_recipients_run ON workflow_recipients (run_id, seq)`);
    await q.query(`CREATE INDEX IF NOT EXISTS workflow_recipients_run_state ON workflow_recipients (run_id, state)`);
    await q.query(`CREATE INDEX IF NOT EXISTS workflow_recipients_run_number ON workflow_recipients (run_id, to_number)`);
    await q.query(`CREATE INDEX IF NOT EXISTS workflow_recipients_in_flight ON workflow_recipients (account_id, run_id) WHERE state IN ('dialing', 'in_call')`);
    await q.query(`CREATE INDEX IF NOT EXISTS workflow_recipients_waiting ON workflow_recipients (account_id, due_at, seq) WHERE state = 'waiting'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS workflow_recipients`);
    await q.query(`DROP TABLE IF EXISTS workflow_runs`);
    await q.query(`DROP TABLE IF EXISTS workflows`);
  }
}

export const WORKFLOWS_MIGRATIONS = [CreateOutbox1763700000000, BusDeadLetters1764200000000, CreateWorkflows1765200000100];
