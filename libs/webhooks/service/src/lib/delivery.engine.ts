import { Inject, Injectable, Optional } from '@nestjs/common';
import { AgentWebhooks } from './agent-webhooks';
import { publicEnvelope, WebhookEvent } from '@parley/contracts';
import { httpAllowed, safeRequest, WebhookUrlRules } from '@parley/egress';
import { serviceLogger } from '@parley/observability';
import { defaultProjectId, GroupCommit } from '@parley/persistence';
import { ClaimedDelivery, DeliveriesRepository, NewDelivery } from './deliveries.repository';
import { EndpointsDomain, WEBHOOK_URL_RULES } from './endpoints.domain';
import { EndpointEntity } from './entities';
import { EndpointsRepository } from './endpoints.repository';
import { failureStreaks } from './failure-streaks';
import { attemptDuration, commitToFirstAttempt, deliveriesTotal, disabledEndpoints, queueDepth, queueOldestAge } from './metrics';
import { DELIVERY_TIMEOUT_MS, DISABLE_AFTER_FAILURES, HEADER, MAX_ATTEMPTS, RETRY_DELAYS_MS, signatureHeader, subscribes } from './signing';

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
/**
 * Projects partition the endpoints: one of the account's default project (or stored before projects) receives the
 * whole account's events; one of another project only the events of that project (its calls', its own).
 */
export function receivesProject(endpoint: EndpointEntity, event: WebhookEvent): boolean {
  return !endpoint.projectId || endpoint.projectId === defaultProjectId(endpoint.accountId) || endpoint.projectId === event.project_id;
}

export function envelope(event: WebhookEvent): string {
  return JSON.stringify(publicEnvelope(event));
}

/**
 * Signed, at-least-once delivery. Events fan out into one row per subscribed endpoint (idempotent on the event
 * id, so a redelivered event adds nothing); each pass (run by DeliveryRunner in every replica) claims due rows with
 * a lease and SKIP LOCKED, sends them, and writes the next attempt time to the database — the schedule survives
 * restarts.
 */
@Injectable()
export class DeliveryEngine {
  private readonly log = serviceLogger('webhook-dispatcher');
  /** Told when work may be due now (DeliveryRunner runs a pass); nobody when no runner drives this engine. */
  private workArrived: (() => void) | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  /** The requests on the wire, by delivery id: aborted when their delivery is cancelled meanwhile. */
  private readonly sending = new Map<string, AbortController>();
  private gaugesAt = 0;
  private abandonCheckedAt = 0;

  constructor(
    private readonly deliveries: DeliveriesRepository,
    private readonly endpointRows: EndpointsRepository,
    private readonly endpoints: EndpointsDomain,
    @Inject(WEBHOOK_URL_RULES) private readonly rules: WebhookUrlRules,
    @Optional() private readonly agentWebhooks?: AgentWebhooks,
  ) {}

  /** `listener` is called whenever work may be due now: a fan-out wrote deliveries, an attempt freed a place. */
  whenWorkArrives(listener: () => void): void {
    this.workArrived = listener;
  }

  nudge(): void {
    this.workArrived?.();
  }

  /** Resolves once the attempts in flight have finished and been recorded. */
  async drain(): Promise<void> {
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
    const perEvent = events.map((event, i) => targets[i].filter((e) => subscribes(e.events, event.type) && receivesProject(e, event)));
    const rows = events.flatMap((event, i) => {
      const body = envelope(event);
      return perEvent[i].map((t): NewDelivery => ({ eventId: event.id, eventType: event.type, endpointId: t.id, body, state: t.enabled ? 'pending' : 'skipped' }));
    });
    if (rows.length) {
      await this.deliveries.insert(rows);
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
      for (const e of await this.endpointRows.forAccounts(accounts)) byAccount.get(e.accountId)?.push(e);
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

  /**
   * Abandons the attempts in flight whose delivery was cancelled meanwhile (its endpoint disabled or deleted, by
   * whichever replica): their requests are aborted and their outcome neither counts nor reschedules anything.
   */
  async abandonCancelled(): Promise<void> {
    this.abandonCheckedAt = Date.now();
    if (!this.sending.size) return;
    const cancelled = await this.deliveries.notPending([...this.sending.keys()]);
    for (const id of cancelled) this.sending.get(id)?.abort(new Error('abandoned: the endpoint was disabled or deleted while this attempt was in flight'));
  }

  /**
   * Claims due deliveries and starts their attempts (resolving once they finished, by default); first abandons
   * attempts whose delivery was cancelled. Returns how many it claimed. Due times and leases are the database's.
   */
  async pass(options: { wait?: boolean } = {}): Promise<number> {
    if (Date.now() - this.abandonCheckedAt >= ABANDON_CHECK_MS) await this.abandonCancelled();
    const room = MAX_IN_FLIGHT - this.inFlight.size;
    if (room <= 0) return 0; // every finishing attempt nudges the loop
    const claimed = await this.deliveries.claim(room, LEASE_MS, PER_ENDPOINT_CONCURRENCY);
    // Endpoints and their secrets are read once per pass, not once per attempt.
    const ids = [...new Set(claimed.map((d) => d.endpointId))];
    const endpoints = new Map((await this.endpointRows.findByIds(ids)).map((e) => [e.id, e]));
    const secrets = ids.length ? await this.endpoints.activeSecrets(ids) : new Map<string, string[]>();
    const attempts = Promise.all(
      claimed.map((d) =>
        this.track(
          this.attempt(d, endpoints.get(d.endpointId), secrets.get(d.endpointId) ?? []).catch((e) => this.log.warn({ err: e }, 'attempt failed')),
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

  private async attempt(d: ClaimedDelivery, endpoint: EndpointEntity | undefined, secrets: string[]) {
    // Disabled or deleted since the claim: the same transaction cancelled this delivery, so nothing is sent.
    if (!endpoint?.enabled) return;
    const attempt = d.attempts + 1;
    if (attempt === 1) commitToFirstAttempt.observe((Date.now() - new Date(JSON.parse(d.body).created_at).getTime()) / 1000);
    const abort = new AbortController();
    this.sending.set(d.id, abort);
    const result = await this.send(endpoint, d.body, d.eventId, d.eventType, attempt, secrets, abort.signal).finally(() => this.sending.delete(d.id));
    const aborted = abort.signal.aborted;
    const retry = !result.delivered && !aborted && attempt < MAX_ATTEMPTS;
    const state = result.delivered ? 'succeeded' : aborted ? 'cancelled' : retry ? 'pending' : 'failed';
    deliveriesTotal.inc({ outcome: result.delivered ? 'succeeded' : aborted ? 'aborted' : retry ? 'retrying' : 'failed' });
    const delivery = { deliveryId: d.id, endpointId: d.endpointId, eventId: d.eventId, eventType: d.eventType, test: false, aborted };
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
   * Writes a batch of finished attempts in one statement (DeliveriesRepository.recordAttempts) with each endpoint's
   * failure count: every failed attempt counts and the DISABLE_AFTER_FAILURES-th in a row disables it with the
   * reason, cancelling its pending deliveries as a manual disable does; a success resets the count. Test deliveries
   * and abandoned attempts are recorded and never counted.
   */
  private async record(records: AttemptRecord[]): Promise<void[]> {
    // The batch is in the order attempts finished, which is the order the counting rule reads.
    const perEndpoint = failureStreaks(
      records.map((r) => ({ endpointId: r.endpointId, delivered: r.result.delivered, test: r.test, aborted: r.aborted, result: r.result })),
    );
    await this.deliveries.recordAttempts(
      records.map((r) => ({
        deliveryId: r.deliveryId,
        endpointId: r.endpointId,
        eventId: r.eventId,
        eventType: r.eventType,
        attempt: r.attempt,
        state: r.state,
        delayMs: r.delayMs,
        statusCode: r.result.status || null,
        error: r.result.error ?? null,
        durationMs: r.result.durationMs,
        succeeded: r.result.delivered,
        test: r.test,
        aborted: r.aborted,
      })),
      [...perEndpoint].map(([endpointId, c]) => ({
        endpointId,
        reset: c.reset,
        failures: c.failures,
        disableReason: c.last ? `Disabled after ${DISABLE_AFTER_FAILURES} consecutive failed deliveries; last: ${describe(c.last)}` : null,
      })),
      { disableAfter: DISABLE_AFTER_FAILURES, cancelReason: AUTO_DISABLED },
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
    const stats = await this.deliveries.queueStats();
    queueDepth.set(stats.depth);
    queueOldestAge.set(stats.oldestAgeSeconds);
    disabledEndpoints.set(stats.disabledEndpoints);
  }
}

function describe(result: AttemptResult): string {
  return result.error ?? `HTTP ${result.status}`;
}
