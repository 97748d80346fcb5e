import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { DataSource, In, IsNull } from 'typeorm';
import { AgentWebhooks } from './agent-webhooks';
import { publicEnvelope, WebhookEvent } from '@parley/contracts';
import { httpAllowed, safeRequest, WebhookUrlRules } from '@parley/egress';
import { serviceLogger } from '@parley/observability';
import { GroupCommit, newId } from '@parley/persistence';
import { CLOCK, databaseClock, DbClock, sqlNow } from './db-clock';
import { EndpointsDomain, WEBHOOK_URL_RULES } from './endpoints.domain';
import { EndpointEntity } from './entities';
import { failureStreaks } from './failure-streaks';
import { attemptDuration, commitToFirstAttempt, deliveriesTotal, disabledEndpoints, queueDepth, queueOldestAge } from './metrics';
import { DELIVERY_TIMEOUT_MS, DISABLE_AFTER_FAILURES, HEADER, MAX_ATTEMPTS, RETRY_DELAYS_MS, signatureHeader, subscribes } from './signing';

interface Claimed {
  id: string;
  event_id: string;
  event_type: string;
  endpoint_id: string;
  body: string;
  attempts: number;
  created_at: Date;
}

export interface AttemptResult {
  delivered: boolean;
  status: number;
  error?: string;
  durationMs: number;
}

/** A finished attempt, waiting to be written with the others that finished meanwhile. */
interface AttemptRecord {
  /** The scheduled delivery; null for a test delivery, which has none. */
  deliveryId: string | null;
  endpointId: string;
  eventId: string;
  eventType: string;
  test: boolean;
  /** Abandoned in flight because its delivery was cancelled (endpoint disabled or deleted): never counted. */
  aborted: boolean;
  attempt: number;
  result: AttemptResult;
  state: 'succeeded' | 'pending' | 'failed' | 'cancelled';
  /** The wait before the next attempt, when one follows; due at the database's now plus this. */
  delayMs: number | null;
}

const AUTO_DISABLED = `the endpoint was disabled automatically after ${DISABLE_AFTER_FAILURES} consecutive failed deliveries`;

/** At most this many attempts run at once towards one endpoint, so a slow receiver cannot starve others. */
const PER_ENDPOINT_CONCURRENCY = 8;
const LEASE_MS = DELIVERY_TIMEOUT_MS + 20_000;
/** Attempts this replica runs at once: a pass claims only what leaves room under it. */
const MAX_IN_FLIGHT = 256;
/** A busy replica passes far more often than this; it looks for cancelled attempts in flight at most this often. */
const ABANDON_CHECK_MS = 250;

/** The public envelope: exactly what receivers get, byte for byte on every attempt. */
export function envelope(event: WebhookEvent): string {
  return JSON.stringify(publicEnvelope(event));
}

/**
 * Signed, at-least-once delivery. Events fan out into one row per subscribed endpoint (idempotent on the event
 * id, so a redelivered event adds nothing); a worker in every replica claims due rows with a lease and
 * SKIP LOCKED, sends them, and writes the next attempt time to the database — the schedule survives restarts.
 */
@Injectable()
export class DeliveryEngine implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = serviceLogger('webhook-dispatcher');
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private readonly inFlight = new Set<Promise<void>>();
  /** The requests on the wire, by delivery id: aborted when their delivery is cancelled meanwhile. */
  private readonly sending = new Map<string, AbortController>();
  private gaugesAt = 0;
  private abandonCheckedAt = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly endpoints: EndpointsDomain,
    @Inject(WEBHOOK_URL_RULES) private readonly rules: WebhookUrlRules,
    @Inject(CLOCK) private readonly clock: DbClock,
    @Optional() private readonly agentWebhooks?: AgentWebhooks,
  ) {}

  onApplicationBootstrap(): void {
    if (this.clock === databaseClock) this.schedule(0);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    await Promise.allSettled([...this.inFlight]);
  }

  /**
   * Fans an event out: to the agent's own `webhook_url` when it has one (that overrides the tenant's endpoints
   * for its events), otherwise to the account's subscribed endpoints — a delivery to each enabled one, and one
   * recorded as skipped (never sent, shown in its history) to each disabled one. Events accepted at the same time
   * share one endpoint lookup and one insert (the bus hands this replica several at once). Resolves with the
   * deliveries to send per event.
   */
  accept(event: WebhookEvent): Promise<number> {
    return this.accepted.add(event);
  }

  private readonly accepted = new GroupCommit<WebhookEvent, number>((events) => this.fanOut(events), 200);

  private async fanOut(events: WebhookEvent[]): Promise<number[]> {
    const targets = await this.targets(events);
    const perEvent = events.map((event, i) => targets[i].filter((e) => subscribes(e.events, event.type)));
    const rows = events.flatMap((event, i) => {
      const body = envelope(event);
      return perEvent[i].map((t) => ({ event, body, endpointId: t.id, state: t.enabled ? 'pending' : 'skipped' }));
    });
    if (rows.length) {
      await this.dataSource.query(
        `INSERT INTO deliveries (id, event_id, event_type, endpoint_id, body, state, next_attempt_at, settled_at, settle_reason)
         SELECT id, event_id, event_type, endpoint_id, body, state, t.now,
                CASE WHEN state = 'skipped' THEN t.now END, CASE WHEN state = 'skipped' THEN 'the endpoint was disabled' END
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS r(id, event_id, event_type, endpoint_id, body, state),
                (SELECT ${sqlNow(7)} AS now) t
         ON CONFLICT (event_id, endpoint_id) DO NOTHING`,
        [
          rows.map(() => newId('whd')),
          rows.map((r) => r.event.id),
          rows.map((r) => r.event.type),
          rows.map((r) => r.endpointId),
          rows.map((r) => r.body),
          rows.map((r) => r.state),
          this.clock.fixedNow(),
        ],
      );
      this.nudge();
    }
    return perEvent.map((t) => t.filter((e) => e.enabled).length);
  }

  /** Each event's candidate endpoints: its agent's webhook_url endpoint, or its account's endpoints (one query for all). */
  private async targets(events: WebhookEvent[]): Promise<EndpointEntity[][]> {
    const own = await Promise.all(events.map((event) => this.agentEndpoint(event)));
    const accounts = [...new Set(events.filter((_, i) => !own[i]).map((e) => e.account_id))];
    const byAccount = new Map<string, EndpointEntity[]>(accounts.map((a) => [a, []]));
    if (accounts.length) {
      const found = await this.dataSource.getRepository(EndpointEntity).findBy({ accountId: In(accounts), ownerAgentId: IsNull(), deletedAt: IsNull() });
      for (const e of found) byAccount.get(e.accountId)?.push(e);
    }
    return events.map((event, i) => (own[i] ? [own[i]] : (byAccount.get(event.account_id) ?? [])));
  }

  private async agentEndpoint(event: WebhookEvent): Promise<EndpointEntity | undefined> {
    const url = event.agent_id && this.agentWebhooks ? await this.agentWebhooks.webhookUrl(event.account_id, event.agent_id) : undefined;
    if (!url || !event.agent_id) return undefined;
    try {
      return await this.endpoints.forAgentWebhook(event.account_id, event.agent_id, url);
    } catch (error) {
      this.log.warn({ err: error, agent_id: event.agent_id }, 'agent webhook_url refused; using the tenant endpoints');
      return undefined;
    }
  }

  nudge(): void {
    if (this.stopped || this.clock !== databaseClock) return;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      // The loop does not wait for attempts: the next pass claims more while they run (leases and the
      // per-endpoint limit keep it bounded), so one slow receiver does not hold up the others.
      this.running = this.pass({ wait: false })
        .then((n) => {
          if (n > 0) this.again = true;
        })
        .catch((error) => this.log.warn({ err: error }, 'delivery pass failed'))
        .finally(() => {
          this.running = undefined;
          const more = this.again;
          this.again = false;
          this.schedule(more ? 0 : 200);
        });
    }, ms);
  }

  /**
   * Abandons the attempts in flight whose delivery was cancelled meanwhile (its endpoint disabled or deleted, by
   * whichever replica): their requests are aborted and their outcome neither counts nor reschedules anything.
   */
  async abandonCancelled(): Promise<void> {
    this.abandonCheckedAt = Date.now();
    if (!this.sending.size) return;
    const cancelled: { id: string }[] = await this.dataSource.query(`SELECT id FROM deliveries WHERE id = ANY($1) AND state <> 'pending'`, [
      [...this.sending.keys()],
    ]);
    for (const { id } of cancelled) this.sending.get(id)?.abort(new Error('abandoned: the endpoint was disabled or deleted while this attempt was in flight'));
  }

  /**
   * Claims due deliveries and starts their attempts (resolving once they finished, by default); first abandons
   * attempts whose delivery was cancelled. Returns how many it claimed. Due times and leases are the database's.
   */
  async pass(options: { wait?: boolean } = {}): Promise<number> {
    if (Date.now() - this.abandonCheckedAt >= ABANDON_CHECK_MS) await this.abandonCancelled();
    const room = MAX_IN_FLIGHT - this.inFlight.size;
    if (room <= 0) return 0; // every finishing attempt nudges the loop
    const now = sqlNow(1);
    const claimed: Claimed[] =
      await this.dataSource.query(
        // Fair by endpoint, not by row: every enabled endpoint with due work gets its free places (up to the
        // per-endpoint limit), the one waiting longest first, so a slow receiver's backlog — however long — never
        // fills the pass. Endpoints with pending work are found by skipping through the index (one probe each).
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
           RETURNING d.id, d.event_id, d.event_type, d.endpoint_id, d.body, d.attempts, d.created_at
         )
         SELECT * FROM claimed`,
        [this.clock.fixedNow(), LEASE_MS, PER_ENDPOINT_CONCURRENCY, room],
      );
    // Endpoints and their secrets are read once per pass, not once per attempt.
    const ids = [...new Set(claimed.map((d) => d.endpoint_id))];
    const endpoints = new Map((ids.length ? await this.dataSource.getRepository(EndpointEntity).findBy({ id: In(ids) }) : []).map((e) => [e.id, e]));
    const secrets = ids.length ? await this.endpoints.activeSecrets(ids) : new Map<string, string[]>();
    const attempts = Promise.all(
      claimed.map((d) =>
        this.track(
          this.attempt(d, endpoints.get(d.endpoint_id), secrets.get(d.endpoint_id) ?? []).catch((e) => this.log.warn({ err: e }, 'attempt failed')),
        ),
      ),
    );
    if (options.wait ?? true) await attempts;
    if (Date.now() - this.gaugesAt > 5_000) {
      this.gaugesAt = Date.now();
      await this.refreshGauges();
    }
    return claimed.length;
  }

  private track(work: Promise<void>): Promise<void> {
    this.inFlight.add(work);
    return work.finally(() => {
      this.inFlight.delete(work);
      // A finished attempt frees a place at its endpoint: claim the next one now, not at the next poll.
      this.nudge();
    });
  }

  private async attempt(d: Claimed, endpoint: EndpointEntity | undefined, secrets: string[]) {
    // Disabled or deleted since the claim: the same transaction cancelled this delivery, so nothing is sent.
    if (!endpoint?.enabled) return;
    const attempt = d.attempts + 1;
    if (attempt === 1) commitToFirstAttempt.observe((Date.now() - new Date(JSON.parse(d.body).created_at).getTime()) / 1000);
    const abort = new AbortController();
    this.sending.set(d.id, abort);
    const result = await this.send(endpoint, d.body, d.event_id, d.event_type, attempt, secrets, abort.signal).finally(() => this.sending.delete(d.id));
    const aborted = abort.signal.aborted;
    const retry = !result.delivered && !aborted && attempt < MAX_ATTEMPTS;
    const state = result.delivered ? 'succeeded' : aborted ? 'cancelled' : retry ? 'pending' : 'failed';
    deliveriesTotal.inc({ outcome: result.delivered ? 'succeeded' : aborted ? 'aborted' : retry ? 'retrying' : 'failed' });
    const delivery = { deliveryId: d.id, endpointId: d.endpoint_id, eventId: d.event_id, eventType: d.event_type, test: false, aborted };
    await this.recorded.add({ ...delivery, attempt, result, state, delayMs: retry ? RETRY_DELAYS_MS[attempt - 1] : null });
  }

  /**
   * A synthetic delivery (the test route): sent once now, even to a disabled endpoint, never retried, and recorded
   * in the endpoint's history marked as a test; it does not move the failure count (see failureStreaks).
   */
  async sendTest(endpoint: EndpointEntity, body: string, eventId: string, eventType: string): Promise<AttemptResult> {
    const result = await this.send(endpoint, body, eventId, eventType, 1);
    const record = { deliveryId: null, endpointId: endpoint.id, eventId, eventType, test: true, aborted: false, attempt: 1 };
    await this.recorded.add({ ...record, result, state: result.delivered ? 'succeeded' : 'failed', delayMs: null });
    return result;
  }

  /** Attempts that finish while a write runs are written together by the next one. */
  private readonly recorded = new GroupCommit<AttemptRecord>((records) => this.record(records));

  /**
   * One statement (atomic) for a batch of finished attempts: each delivery's schedule, each attempt's record, and
   * each endpoint's failure count — every failed attempt counts and the 20th in a row disables it with the
   * reason, cancelling its pending deliveries as a manual disable does; a success resets the count (and writes
   * nothing when it is already 0, so successful attempts never queue on the endpoint row). Test deliveries and
   * abandoned attempts are recorded and never counted. A delivery cancelled while its attempt was in flight stays
   * cancelled. Every time comes from the database's clock.
   */
  private async record(records: AttemptRecord[]): Promise<void[]> {
    // The batch is in the order attempts finished, which is the order the counting rule reads.
    const perEndpoint = failureStreaks(
      records.map((r) => ({ endpointId: r.endpointId, delivered: r.result.delivered, test: r.test, aborted: r.aborted, result: r.result })),
    );
    const column = <V>(f: (r: AttemptRecord) => V) => records.map(f);
    const endpointIds = [...perEndpoint.keys()];
    const counts = [...perEndpoint.values()];
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
         -- A disabled endpoint keeps no pending delivery (see EndpointsDomain.cancelPending).
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
        column((r) => r.deliveryId),
        column(() => newId('wha')),
        column((r) => r.attempt),
        column((r) => r.state),
        column((r) => r.delayMs),
        column((r) => r.endpointId),
        column((r) => r.eventId),
        column((r) => r.eventType),
        column((r) => r.result.status || null),
        column((r) => r.result.error ?? null),
        column((r) => r.result.durationMs),
        column((r) => r.result.delivered),
        column((r) => r.test),
        column((r) => r.aborted),
        endpointIds,
        counts.map((c) => c.reset),
        counts.map((c) => c.failures),
        counts.map((c) => (c.last ? `Disabled after ${DISABLE_AFTER_FAILURES} consecutive failed deliveries; last: ${describe(c.last)}` : null)),
        DISABLE_AFTER_FAILURES,
        this.clock.fixedNow(),
        AUTO_DISABLED,
      ],
    );
    return records.map(() => undefined);
  }

  /** One signed POST (recorded by the caller). */
  private async send(
    endpoint: EndpointEntity,
    body: string,
    eventId: string,
    eventType: string,
    attempt: number,
    secrets?: string[],
    signal?: AbortSignal,
  ): Promise<AttemptResult> {
    // The signature's time is for the receiver's replay window, which compares it with a wall clock: this one's.
    const t = Math.floor(Date.now() / 1000);
    secrets ??= (await this.endpoints.activeSecrets([endpoint.id])).get(endpoint.id) ?? [];
    const started = performance.now();
    const end = attemptDuration.startTimer();
    try {
      const res = await safeRequest(
        endpoint.url,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'Parley-Webhooks/1',
            [HEADER.signature]: signatureHeader(body, secrets, t),
            [HEADER.timestamp]: String(t),
            [HEADER.eventId]: eventId,
            [HEADER.eventType]: eventType,
            [HEADER.attempt]: String(attempt),
          },
          body,
          timeoutMs: DELIVERY_TIMEOUT_MS,
          signal,
          allowHttp: httpAllowed(endpoint.url, this.rules.httpHosts),
        },
        this.rules.egress,
      );
      const delivered = res.status >= 200 && res.status < 300;
      return { delivered, status: res.status, durationMs: Math.round(performance.now() - started), ...(delivered ? {} : { error: `HTTP ${res.status}` }) };
    } catch (error) {
      return { delivered: false, status: 0, error: String((error as Error).message ?? error).slice(0, 500), durationMs: Math.round(performance.now() - started) };
    } finally {
      end();
    }
  }

  private async refreshGauges(): Promise<void> {
    const now = sqlNow(1);
    const [row] = await this.dataSource.query(
      `SELECT (SELECT count(*) FROM deliveries WHERE state = 'pending')::int AS depth,
              (SELECT EXTRACT(EPOCH FROM (${now} - min(next_attempt_at))) FROM deliveries WHERE state = 'pending' AND next_attempt_at <= ${now}) AS age,
              (SELECT count(*) FROM endpoints WHERE NOT enabled AND disabled_reason IS NOT NULL AND deleted_at IS NULL)::int AS disabled`,
      [this.clock.fixedNow()],
    );
    queueDepth.set(row.depth);
    queueOldestAge.set(Number(row.age ?? 0));
    disabledEndpoints.set(row.disabled);
  }
}

function describe(result: AttemptResult): string {
  return result.error ?? `HTTP ${result.status}`;
}
