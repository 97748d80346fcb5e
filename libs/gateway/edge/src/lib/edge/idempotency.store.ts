import { Inject, Injectable, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import { serviceLogger } from '@parley/observability';
import { DataSource } from 'typeorm';

export type BeginOutcome =
  | { kind: 'owner' }
  | { kind: 'replay'; status: number; body: string }
  | { kind: 'mismatch' }
  | { kind: 'running' }
  /** The first request stopped without an answer (failed on our side, or its gateway died): it may have taken effect. */
  | { kind: 'interrupted' };

/** Test seam for time: `now` replaces the database's clock (retention, leases); `leaseSeconds` the 60 s lease. */
export interface IdempotencyTiming {
  now?: () => Date;
  leaseSeconds?: number;
}
export const IDEMPOTENCY_TIMING = Symbol('IDEMPOTENCY_TIMING');

/** How long a running request holds its key without renewing it (renewed every third of it while it runs). */
const LEASE_SECONDS = 60;
const RETENTION_HOURS = 24;

/**
 * Idempotency records in PostgreSQL, so every gateway replica sees them. The primary key (account, key) makes
 * concurrent first requests race on one INSERT: exactly one becomes the owner and runs the request.
 *
 * A key whose request may have taken effect is never given to a second run here, except on routes that hand the
 * key to the owning service (`forwarded`), which then decides in its own transaction (it returns what the first
 * run made). Times are the database's, so replicas with skewed clocks agree.
 */
@Injectable()
export class IdempotencyStore implements OnModuleInit, OnModuleDestroy {
  private sweeper: NodeJS.Timeout | undefined;
  private readonly now: () => Date | null;
  private readonly leaseSeconds: number;
  private readonly log = serviceLogger('gateway');

  constructor(
    private readonly dataSource: DataSource,
    @Optional() @Inject(IDEMPOTENCY_TIMING) timing?: IdempotencyTiming,
  ) {
    // null: the SQL takes the database's now().
    this.now = timing?.now ?? (() => null);
    this.leaseSeconds = timing?.leaseSeconds ?? LEASE_SECONDS;
  }

  onModuleInit(): void {
    this.sweeper = setInterval(() => void this.sweep().catch(() => undefined), 10 * 60_000);
    this.sweeper.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }

  /**
   * Takes the key when it is new, older than the retention period, or retryable with this same request; a lapsed
   * lease (the gateway died mid-request) is taken over only on a `forwarded` route. Otherwise says what it holds.
   */
  async begin(accountId: string, key: string, requestHash: string, forwarded: boolean): Promise<BeginOutcome> {
    const claimed: unknown[] = await this.dataSource.query(
      `WITH t AS (SELECT COALESCE($6::timestamptz, now()) AS now)
       INSERT INTO idempotency_keys (account_id, key, request_hash, state, created_at, locked_until)
       SELECT $1, $2, $3, 'running', t.now, t.now + make_interval(secs => $4) FROM t
       ON CONFLICT (account_id, key) DO UPDATE
         SET request_hash = EXCLUDED.request_hash, state = 'running', status = NULL, body = NULL,
             created_at = EXCLUDED.created_at, locked_until = EXCLUDED.locked_until
         WHERE idempotency_keys.created_at <= EXCLUDED.created_at - make_interval(hours => $5)
            OR (idempotency_keys.request_hash = EXCLUDED.request_hash
                AND (idempotency_keys.state = 'retryable'
                     OR ($7 AND idempotency_keys.state = 'running' AND idempotency_keys.locked_until < EXCLUDED.created_at)))
       RETURNING 1`,
      [accountId, key, requestHash, this.leaseSeconds, RETENTION_HOURS, this.now(), forwarded],
    );
    if (claimed.length) return { kind: 'owner' };
    const [row]: { request_hash: string; state: string; status: number; body: string; lapsed: boolean }[] = await this.dataSource.query(
      `SELECT request_hash, state, status, body, locked_until < COALESCE($3::timestamptz, now()) AS lapsed
         FROM idempotency_keys WHERE account_id = $1 AND key = $2`,
      [accountId, key, this.now()],
    );
    if (!row) return this.begin(accountId, key, requestHash, forwarded);
    if (row.request_hash !== requestHash) return { kind: 'mismatch' };
    if (row.state === 'done') return { kind: 'replay', status: row.status, body: row.body };
    // Made retryable between the two statements: take it now.
    if (row.state === 'retryable') return this.begin(accountId, key, requestHash, forwarded);
    return row.lapsed ? { kind: 'interrupted' } : { kind: 'running' };
  }

  /**
   * Keeps the lease of a running request from lapsing, however long it runs; returns the function that stops.
   * A renewal that fails is only logged: the next one may succeed, and a lapsed lease never reruns a request that
   * may have taken effect (see begin).
   */
  hold(accountId: string, key: string): () => void {
    const timer = setInterval(() => {
      this.dataSource
        .query(
          `UPDATE idempotency_keys SET locked_until = COALESCE($3::timestamptz, now()) + make_interval(secs => $4)
            WHERE account_id = $1 AND key = $2 AND state = 'running'`,
          [accountId, key, this.now(), this.leaseSeconds],
        )
        .catch((err: unknown) => this.log.warn({ err }, 'idempotency lease not renewed'));
    }, (this.leaseSeconds * 1000) / 3);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Stores the response as the exact JSON text first sent, so a replay is byte-identical. */
  async complete(accountId: string, key: string, status: number, body: unknown): Promise<void> {
    await this.dataSource.query(
      `UPDATE idempotency_keys SET state = 'done', status = $3, body = $4 WHERE account_id = $1 AND key = $2 AND state = 'running'`,
      [accountId, key, status, JSON.stringify(body ?? null)],
    );
  }

  /**
   * Lets the same request run again under this key (it changed nothing: refused; or the owning service keeps its
   * outcome), while another request with the key is still refused.
   */
  async reopen(accountId: string, key: string): Promise<void> {
    await this.dataSource.query(`UPDATE idempotency_keys SET state = 'retryable' WHERE account_id = $1 AND key = $2 AND state = 'running'`, [
      accountId,
      key,
    ]);
  }

  /** Ends the lease of a request that stopped without an answer, so a retry hears at once that it was interrupted. */
  async interrupt(accountId: string, key: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE idempotency_keys SET locked_until = COALESCE($3::timestamptz, now()) - interval '1 millisecond'
        WHERE account_id = $1 AND key = $2 AND state = 'running'`,
      [accountId, key, this.now()],
    );
  }

  private async sweep(): Promise<void> {
    await this.dataSource.query(`DELETE FROM idempotency_keys WHERE created_at < COALESCE($2::timestamptz, now()) - make_interval(hours => $1)`, [
      RETENTION_HOURS,
      this.now(),
    ]);
  }
}
