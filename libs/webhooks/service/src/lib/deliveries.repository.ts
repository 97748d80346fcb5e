import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { newId, Position } from '@parley/persistence';
import { CLOCK, DbClock, sqlNow } from './db-clock';

/** A delivery claimed for one attempt (leased to this replica). */
export interface ClaimedDelivery {
  id: string;
  eventId: string;
  eventType: string;
  endpointId: string;
  body: string;
  /** Attempts made before this one. */
  attempts: number;
}

/** One event's delivery to one endpoint, as fan-out writes it. */
export interface NewDelivery {
  eventId: string;
  eventType: string;
  endpointId: string;
  body: string;
  /** `skipped`: the endpoint is disabled; recorded in its history, never sent. */
  state: 'pending' | 'skipped';
}

/** A finished attempt as it is written. */
export interface FinishedAttempt {
  /** The scheduled delivery; null for a test delivery, which has none. */
  deliveryId: string | null;
  endpointId: string;
  eventId: string;
  eventType: string;
  attempt: number;
  state: 'succeeded' | 'pending' | 'failed' | 'cancelled';
  /** The wait before the next attempt, when one follows; due at the database's now plus this. */
  delayMs: number | null;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  succeeded: boolean;
  test: boolean;
  aborted: boolean;
}

/** How a batch of attempts moves one endpoint's consecutive-failure count (see failureStreaks). */
export interface FailureCount {
  endpointId: string;
  reset: boolean;
  failures: number;
  /** The reason recorded if this batch disables the endpoint. */
  disableReason: string | null;
}

/** One line of an endpoint's history: an attempt, or a delivery that ended without one (cancelled, skipped). */
export interface HistoryEntry {
  id: string;
  eventId: string;
  eventType: string;
  attempt: number;
  statusCode: number;
  error: string;
  durationMs: number;
  succeeded: boolean;
  createdAt: Date;
  nextAttemptAt: Date | null;
  test: boolean;
  outcome: string;
}

/**
 * Deliveries and their attempts (tables deliveries, delivery_attempts) and the endpoint columns a delivery outcome
 * changes (the failure count, automatic disabling). Every time is the database's clock (DbClock).
 */
@Injectable()
export class DeliveriesRepository {
  constructor(
    private readonly dataSource: DataSource,
    @Inject(CLOCK) private readonly clock: DbClock,
  ) {}

  /** Writes deliveries due now; one that exists already for its event and endpoint is left as it is. */
  async insert(rows: NewDelivery[]): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO deliveries (id, event_id, event_type, endpoint_id, body, state, next_attempt_at, settled_at, settle_reason)
       SELECT id, event_id, event_type, endpoint_id, body, state, t.now,
              CASE WHEN state = 'skipped' THEN t.now END, CASE WHEN state = 'skipped' THEN 'the endpoint was disabled' END
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS r(id, event_id, event_type, endpoint_id, body, state),
              (SELECT ${sqlNow(7)} AS now) t
       ON CONFLICT (event_id, endpoint_id) DO NOTHING`,
      [
        rows.map(() => newId('whd')),
        rows.map((r) => r.eventId),
        rows.map((r) => r.eventType),
        rows.map((r) => r.endpointId),
        rows.map((r) => r.body),
        rows.map((r) => r.state),
        this.clock.fixedNow(),
      ],
    );
  }

  /** Ends the endpoint's pending deliveries as cancelled, with the reason, in transaction `m`. */
  async cancelPending(m: EntityManager, endpointId: string, reason: string): Promise<void> {
    await m.query(
      `UPDATE deliveries SET state = 'cancelled', locked_until = NULL, settled_at = ${sqlNow(3)}, settle_reason = $2
        WHERE endpoint_id = $1 AND state = 'pending'`,
      [endpointId, reason, this.clock.fixedNow()],
    );
  }

  /**
   * Claims up to `room` due deliveries of enabled endpoints and leases each for `leaseMs`. Fair by endpoint, not by
   * row: every enabled endpoint with due work gets its free places (up to `perEndpoint` leased at once), the one
   * waiting longest first, so a slow receiver's backlog — however long — never fills the claim.
   */
  async claim(room: number, leaseMs: number, perEndpoint: number): Promise<ClaimedDelivery[]> {
    const now = sqlNow(1);
    const rows: { id: string; event_id: string; event_type: string; endpoint_id: string; body: string; attempts: number }[] = await this.dataSource.query(
      // Endpoints with pending work are found by skipping through the index (one probe each).
      `WITH RECURSIVE pending_endpoints AS (
         (SELECT endpoint_id FROM deliveries WHERE state = 'pending' ORDER BY endpoint_id LIMIT 1)
         UNION ALL
         SELECT (SELECT d.endpoint_id FROM deliveries d WHERE d.state = 'pending' AND d.endpoint_id > p.endpoint_id ORDER BY d.endpoint_id LIMIT 1)
           FROM pending_endpoints p WHERE p.endpoint_id IS NOT NULL
       ), places AS (
         SELECT e.id, $3 - (SELECT count(*) FROM deliveries x WHERE x.endpoint_id = e.id AND x.state = 'pending' AND x.locked_until >= ${now})::int AS free,
                (SELECT min(x.next_attempt_at) FROM deliveries x WHERE x.endpoint_id = e.id AND x.state = 'pending') AS oldest
           FROM pending_endpoints p JOIN endpoints e ON e.id = p.endpoint_id
          WHERE e.enabled
       ), picked AS (
         SELECT due.id FROM (SELECT * FROM places WHERE free > 0 ORDER BY oldest) places CROSS JOIN LATERAL (
           SELECT d.id FROM deliveries d
            WHERE d.endpoint_id = places.id AND d.state = 'pending' AND d.next_attempt_at <= ${now} AND (d.locked_until IS NULL OR d.locked_until < ${now})
            ORDER BY d.next_attempt_at LIMIT places.free FOR UPDATE SKIP LOCKED
         ) due
         LIMIT $4
       ), claimed AS (
         UPDATE deliveries d SET locked_until = ${now} + $2::int * interval '1 millisecond' FROM picked WHERE d.id = picked.id
         RETURNING d.id, d.event_id, d.event_type, d.endpoint_id, d.body, d.attempts
       )
       SELECT * FROM claimed`,
      [this.clock.fixedNow(), leaseMs, perEndpoint, room],
    );
    return rows.map((r) => ({ id: r.id, eventId: r.event_id, eventType: r.event_type, endpointId: r.endpoint_id, body: r.body, attempts: r.attempts }));
  }

  /** Those of `ids` that are no longer pending (cancelled, or settled elsewhere). */
  async notPending(ids: string[]): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(`SELECT id FROM deliveries WHERE id = ANY($1) AND state <> 'pending'`, [ids]);
    return rows.map((r) => r.id);
  }

  /**
   * One statement (atomic) for a batch of finished attempts: each delivery's schedule, each attempt's record, and
   * each endpoint's failure count (`counts`) — one whose count reaches `disableAfter` is disabled with its reason,
   * its pending deliveries cancelled with `cancelReason`; a reset writes nothing when the count is already 0, so
   * successful attempts never queue on the endpoint row. A delivery cancelled while its attempt was in flight stays
   * cancelled.
   */
  async recordAttempts(attempts: FinishedAttempt[], counts: FailureCount[], policy: { disableAfter: number; cancelReason: string }): Promise<void> {
    const column = <V>(f: (a: FinishedAttempt) => V) => attempts.map(f);
    await this.dataSource.query(
      `WITH r AS (
         SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::int[], $6::text[], $7::text[], $8::text[],
                              $9::int[], $10::text[], $11::int[], $12::boolean[], $13::boolean[], $14::boolean[])
           AS r(delivery_id, attempt_id, attempt, state, delay_ms, endpoint_id, event_id, event_type, status_code, error, duration_ms, succeeded, test, aborted)
       ), t AS (
         SELECT ${sqlNow(20)} AS now
       ), f AS (
         SELECT * FROM unnest($15::text[], $16::boolean[], $17::int[], $18::text[]) AS f(endpoint_id, reset, failures, reason)
       ), e AS (
         UPDATE endpoints SET
           consecutive_failures = CASE WHEN f.reset THEN f.failures ELSE consecutive_failures + f.failures END,
           enabled = CASE WHEN (CASE WHEN f.reset THEN 0 ELSE consecutive_failures END) + f.failures >= $19 THEN false ELSE enabled END,
           disabled_reason = CASE WHEN (CASE WHEN f.reset THEN 0 ELSE consecutive_failures END) + f.failures >= $19 AND enabled THEN f.reason ELSE disabled_reason END,
           updated_at = CASE WHEN (CASE WHEN f.reset THEN 0 ELSE consecutive_failures END) + f.failures >= $19 AND enabled THEN t.now ELSE updated_at END
           FROM f, t WHERE endpoints.id = f.endpoint_id AND (f.failures > 0 OR consecutive_failures <> 0)
         RETURNING endpoints.id, endpoints.enabled
       ), off AS (
         -- A disabled endpoint keeps no pending delivery (see cancelPending).
         SELECT id FROM e WHERE NOT enabled
       ), s AS (
         SELECT r.*, t.now AS at,
                CASE WHEN r.state = 'pending' AND r.endpoint_id IN (SELECT id FROM off) THEN 'cancelled' ELSE r.state END AS settled,
                CASE WHEN r.state = 'pending' AND r.endpoint_id NOT IN (SELECT id FROM off) THEN t.now + r.delay_ms * interval '1 millisecond' END AS next_at
           FROM r, t
       ), d AS (
         UPDATE deliveries SET attempts = s.attempt, state = s.settled, next_attempt_at = COALESCE(s.next_at, deliveries.next_attempt_at), locked_until = NULL,
                settled_at = CASE WHEN s.settled = 'cancelled' THEN s.at END, settle_reason = CASE WHEN s.settled = 'cancelled' THEN $21 END
           FROM s WHERE deliveries.id = s.delivery_id AND deliveries.state = 'pending'
         RETURNING deliveries.id
       ), c AS (
         UPDATE deliveries SET state = 'cancelled', locked_until = NULL, settled_at = t.now, settle_reason = $21
           FROM off, t
          WHERE deliveries.endpoint_id = off.id AND deliveries.state = 'pending' AND deliveries.id NOT IN (SELECT delivery_id FROM r WHERE delivery_id IS NOT NULL)
       ), a AS (
         INSERT INTO delivery_attempts (id, delivery_id, endpoint_id, event_id, event_type, attempt, status_code, error, duration_ms, succeeded, next_attempt_at, created_at, test, aborted)
         SELECT s.attempt_id, s.delivery_id, s.endpoint_id, s.event_id, s.event_type, s.attempt, s.status_code, s.error, s.duration_ms, s.succeeded,
                CASE WHEN d.id IS NOT NULL THEN s.next_at END, s.at, s.test, s.aborted
           FROM s LEFT JOIN d ON d.id = s.delivery_id
       )
       SELECT 1`,
      [
        column((a) => a.deliveryId),
        column(() => newId('wha')),
        column((a) => a.attempt),
        column((a) => a.state),
        column((a) => a.delayMs),
        column((a) => a.endpointId),
        column((a) => a.eventId),
        column((a) => a.eventType),
        column((a) => a.statusCode),
        column((a) => a.error),
        column((a) => a.durationMs),
        column((a) => a.succeeded),
        column((a) => a.test),
        column((a) => a.aborted),
        counts.map((c) => c.endpointId),
        counts.map((c) => c.reset),
        counts.map((c) => c.failures),
        counts.map((c) => c.disableReason),
        policy.disableAfter,
        this.clock.fixedNow(),
        policy.cancelReason,
      ],
    );
  }

  /** The shared queue as the gauges report it: pending deliveries, the oldest due one's age, auto-disabled endpoints. */
  async queueStats(): Promise<{ depth: number; oldestAgeSeconds: number; disabledEndpoints: number }> {
    const now = sqlNow(1);
    const [row] = await this.dataSource.query(
      `SELECT (SELECT count(*) FROM deliveries WHERE state = 'pending')::int AS depth,
              (SELECT EXTRACT(EPOCH FROM (${now} - min(next_attempt_at))) FROM deliveries WHERE state = 'pending' AND next_attempt_at <= ${now}) AS age,
              (SELECT count(*) FROM endpoints WHERE NOT enabled AND disabled_reason IS NOT NULL AND deleted_at IS NULL)::int AS disabled`,
      [this.clock.fixedNow()],
    );
    return { depth: row.depth, oldestAgeSeconds: Number(row.age ?? 0), disabledEndpoints: row.disabled };
  }

  /** The endpoint's history, newest first: up to `limit` entries after `after`. */
  async history(endpointId: string, limit: number, after: Position | undefined): Promise<HistoryEntry[]> {
    const rows: {
      id: string;
      event_id: string;
      event_type: string;
      attempt: number;
      status_code: number | null;
      error: string | null;
      duration_ms: number;
      succeeded: boolean;
      next_attempt_at: Date | null;
      created_at: Date;
      test: boolean;
      outcome: string;
    }[] = await this.dataSource.query(
      `(SELECT id, event_id, event_type, attempt, status_code, error, duration_ms, succeeded, next_attempt_at, created_at, test,
               CASE WHEN succeeded THEN 'succeeded' WHEN aborted THEN 'aborted' ELSE 'failed' END AS outcome
          FROM delivery_attempts
         WHERE endpoint_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) < ($2::timestamptz, $3))
         ORDER BY created_at DESC, id DESC LIMIT $4)
       UNION ALL
       (SELECT id, event_id, event_type, attempts, NULL, settle_reason, 0, false, NULL, settled_at, false, state
          FROM deliveries
         WHERE endpoint_id = $1 AND state IN ('cancelled', 'skipped') AND ($2::timestamptz IS NULL OR (settled_at, id) < ($2::timestamptz, $3))
         ORDER BY settled_at DESC, id DESC LIMIT $4)
       ORDER BY created_at DESC, id DESC LIMIT $4`,
      [endpointId, after?.createdAt ?? null, after?.id ?? '', limit],
    );
    return rows.map((r) => ({
      id: String(r.id),
      eventId: String(r.event_id),
      eventType: String(r.event_type),
      attempt: Number(r.attempt),
      statusCode: Number(r.status_code ?? 0),
      error: String(r.error ?? ''),
      durationMs: Number(r.duration_ms),
      succeeded: Boolean(r.succeeded),
      createdAt: new Date(r.created_at),
      nextAttemptAt: r.next_attempt_at ? new Date(r.next_attempt_at) : null,
      test: Boolean(r.test),
      outcome: String(r.outcome),
    }));
  }
}
