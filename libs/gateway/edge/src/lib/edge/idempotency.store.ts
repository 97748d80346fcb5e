import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';

export type BeginOutcome =
  | { kind: 'owner' }
  | { kind: 'replay'; status: number; body: string }
  | { kind: 'mismatch' }
  | { kind: 'running' };

/** How long a first request may run before a retry may take its key over (the gateway died mid-request). */
const LEASE_SECONDS = 60;
const RETENTION_HOURS = 24;

/**
 * Idempotency records in PostgreSQL, so every gateway replica sees them. The primary key (account, key) makes
 * concurrent first requests race on one INSERT: exactly one becomes the owner and runs the request.
 */
@Injectable()
export class IdempotencyStore implements OnModuleInit, OnModuleDestroy {
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly dataSource: DataSource) {}

  onModuleInit(): void {
    this.sweeper = setInterval(() => void this.sweep().catch(() => undefined), 10 * 60_000);
    this.sweeper.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }

  async begin(accountId: string, key: string, requestHash: string): Promise<BeginOutcome> {
    // Take the key when it is new, older than the retention period, or abandoned mid-run by the same request.
    const claimed: unknown[] = await this.dataSource.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, state, locked_until)
       VALUES ($1, $2, $3, 'running', now() + make_interval(secs => $4))
       ON CONFLICT (account_id, key) DO UPDATE
         SET request_hash = EXCLUDED.request_hash, state = 'running', status = NULL, body = NULL,
             created_at = now(), locked_until = EXCLUDED.locked_until
         WHERE idempotency_keys.created_at < now() - make_interval(hours => $5)
            OR (idempotency_keys.state = 'running' AND idempotency_keys.locked_until < now()
                AND idempotency_keys.request_hash = EXCLUDED.request_hash)
       RETURNING 1`,
      [accountId, key, requestHash, LEASE_SECONDS, RETENTION_HOURS],
    );
    if (claimed.length) return { kind: 'owner' };
    const [row]: { request_hash: string; state: string; status: number; body: string }[] = await this.dataSource.query(
      `SELECT request_hash, state, status, body FROM idempotency_keys WHERE account_id = $1 AND key = $2`,
      [accountId, key],
    );
    if (!row) return this.begin(accountId, key, requestHash);
    if (row.request_hash !== requestHash) return { kind: 'mismatch' };
    if (row.state === 'running') return { kind: 'running' };
    return { kind: 'replay', status: row.status, body: row.body };
  }

  /** Stores the response as the exact JSON text first sent, so a replay is byte-identical. */
  async complete(accountId: string, key: string, status: number, body: unknown): Promise<void> {
    await this.dataSource.query(
      `UPDATE idempotency_keys SET state = 'done', status = $3, body = $4 WHERE account_id = $1 AND key = $2`,
      [accountId, key, status, JSON.stringify(body ?? null)],
    );
  }

  /** Forgets a key whose request failed on our side, so the client's retry runs it afresh. */
  async release(accountId: string, key: string): Promise<void> {
    await this.dataSource.query(`DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND state = 'running'`, [
      accountId,
      key,
    ]);
  }

  private async sweep(): Promise<void> {
    await this.dataSource.query(`DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => $1)`, [
      RETENTION_HOURS,
    ]);
  }
}
