import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateIdempotencyAndRateLimits1763700000102 implements MigrationInterface {
  name = 'CreateIdempotencyAndRateLimits1763700000102';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS idempotency_keys (
        account_id text NOT NULL,
        key text NOT NULL,
        request_hash text NOT NULL,
        state text NOT NULL CHECK (state IN ('running', 'done')),
        status int,
        body text,
        created_at timestamptz NOT NULL DEFAULT now(),
        locked_until timestamptz NOT NULL,
        PRIMARY KEY (account_id, key)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created_at)`);
    await q.query(`
      CREATE UNLOGGED TABLE IF NOT EXISTS rate_limit_windows (
        bucket text NOT NULL,
        window_start bigint NOT NULL,
        count int NOT NULL,
        PRIMARY KEY (bucket, window_start)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS rate_limit_windows`);
    await q.query(`DROP TABLE IF EXISTS idempotency_keys`);
  }
}

/**
 * Only successes are kept now. A key whose request was refused (or whose outcome the owning service keeps) is
 * `retryable`: the same request runs again, another one is refused. Refusals stored before (a 402 among them) would
 * otherwise replay for 24 hours.
 */
export class IdempotencyRetryableKeys1764100000103 implements MigrationInterface {
  name = 'IdempotencyRetryableKeys1764100000103';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE idempotency_keys DROP CONSTRAINT IF EXISTS idempotency_keys_state_check`);
    await q.query(`ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_state_check CHECK (state IN ('running', 'done', 'retryable'))`);
    await q.query(`UPDATE idempotency_keys SET state = 'retryable', status = NULL, body = NULL WHERE state = 'done' AND status >= 400`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM idempotency_keys WHERE state = 'retryable'`);
    await q.query(`ALTER TABLE idempotency_keys DROP CONSTRAINT IF EXISTS idempotency_keys_state_check`);
    await q.query(`ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_state_check CHECK (state IN ('running', 'done'))`);
  }
}
