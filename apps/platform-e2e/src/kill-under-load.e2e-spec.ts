import { createHash, randomBytes } from 'node:crypto';
import { createServer, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { FakeTwilioServer } from '@parley/carrier-twilio';
import { publicEnvelope, WebhookEvent } from '@parley/contracts';
import { ApiResponse, DisposableNatsServer, DisposablePostgres, eventually, RunningPlatform, ServiceName } from '@parley/testing';

/*
 * Every service SIGKILLed in turn, then PostgreSQL and NATS restarted, while calls are placed and driven through the
 * fake Twilio and agents are written — and not one webhook event is lost, each duplicate is counted and bounded,
 * and an event carries the same id and body on every attempt. NATS and PostgreSQL are servers of this test's own.
 *
 * Duplicates. The dispatcher records an attempt's outcome after the receiver answered; an attempt whose outcome is
 * lost is sent again when its lease (30 s) runs out, with the same id, body and attempt number. An outcome is lost
 * only when the dispatcher dies (SIGKILL) or the database refuses the write (PostgreSQL restart) between the
 * receiver taking the request and the write: D = 2 such disruptions here. Every other redelivery (a relay
 * republishing after the calls service died or the database was away, JetStream redelivering after a dispatcher
 * kill or a NATS restart) adds no attempt, since the fan-out is idempotent on the event id. So one event reaches the
 * receiver at most 1 + D times, and the duplicates number at most D × 8 (the attempts one endpoint may have leased
 * at once). Both disruptions are timed while the receiver holds attempts, so duplicates do occur and are counted.
 */

const KEY = `vsk_killload_${randomBytes(8).toString('hex')}`;
const MEDIA_LOST_SECONDS = 15;
const CARRIER_RECONCILE_SECONDS = 5;
/** The least the calls service accepts: a call recorded but never dialled (its service killed in between) fails no_media. */
const CALL_STUCK_SECONDS = 30;
/** Disruptions that can lose an attempt's outcome (see above), and the attempts one endpoint may have leased. */
const OUTCOME_LOSING_DISRUPTIONS = 2;
const PER_ENDPOINT_CONCURRENCY = 8;
/** Steady load between two disruptions. */
const BETWEEN_MS = 3_000;
const CALL_WORKERS = 3;
/** Attempts the receiver holds on the wire at a disruption (fewer than an endpoint's 8 places). */
const MAX_HELD = 4;
/** Longer than a delivery lease (30 s): the longest an endpoint may wait for a killed dispatcher's places. */
const HOLD_WAIT_MS = 40_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Received {
  /** Service-Event-Id. */
  id: string;
  attempt: number;
  body: string;
  /** The receiver took the event (answered 2xx, or was holding it when the sender went away). */
  taken: boolean;
  at: number;
}

/**
 * The webhook receiver: records every request (id, attempt, raw body); refuses the first attempt of about one event
 * in ten with 500 (chosen by id) so retries happen; on demand holds a few requests unanswered, so a disruption can be
 * timed while attempts are on the wire. Only a few: the attempts a killed dispatcher had leased keep their endpoint's
 * places until the lease ends, and were all 8 held, the endpoint would get nothing for up to 30 s.
 */
class Receiver {
  readonly requests: Received[] = [];
  private holding = false;
  private readonly held: ServerResponse[] = [];
  private readonly server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = String(req.headers['service-event-id']);
      const attempt = Number(req.headers['service-delivery-attempt']);
      const refused = attempt === 1 && createHash('sha256').update(id).digest()[0] < 26;
      this.requests.push({ id, attempt, body: Buffer.concat(chunks).toString('utf8'), taken: !refused, at: Date.now() });
      if (refused) res.writeHead(500).end();
      else if (this.holding && this.held.length < MAX_HELD) this.held.push(res);
      else res.writeHead(200).end();
    });
  });

  static async start(): Promise<Receiver> {
    const receiver = new Receiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  /** Holds new requests (up to MAX_HELD) until `release`; resolves with how many are held once at least one is. */
  async hold(timeoutMs: number): Promise<number> {
    this.holding = true;
    await eventually(async () => (this.held.length > 0 ? true : undefined), timeoutMs, 'an attempt on the wire');
    return this.held.length;
  }

  /** Answers 200 to every held request whose sender is still there, and stops holding. */
  release(): void {
    this.holding = false;
    for (const res of this.held.splice(0)) if (!res.destroyed) res.writeHead(200).end();
  }

  close(): Promise<void> {
    this.release();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    return closed;
  }
}

describe('every service SIGKILLed in turn under load, PostgreSQL and NATS restarted: no webhook event lost (own NATS and PostgreSQL)', () => {
  let nats: DisposableNatsServer;
  let pg: DisposablePostgres;
  let platform: RunningPlatform;
  let receiver: Receiver;
  const twilio = new FakeTwilioServer();

  beforeAll(async () => {
    receiver = await Receiver.start();
    [nats, pg] = await Promise.all([DisposableNatsServer.start(), DisposablePostgres.start()]);
    platform = await RunningPlatform.start({
      mode: 'distributed',
      natsUrl: nats.url,
      databaseServerUrl: pg.url,
      bootstrapKeys: [`acme:owner:${KEY}`],
      env: {
        RPC_TIMEOUT_MS: '1500',
        EGRESS_ALLOWLIST: '127.0.0.1',
        WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
        MEDIA_LOST_SECONDS: String(MEDIA_LOST_SECONDS),
        CARRIER_RECONCILE_SECONDS: String(CARRIER_RECONCILE_SECONDS),
        CALL_STUCK_SECONDS: String(CALL_STUCK_SECONDS),
        ...(await twilio.platformEnv()),
      },
    });
  }, 120_000);

  afterAll(async () => {
    await platform?.stop();
    await twilio.stop();
    await receiver?.close();
    await nats?.stop();
    await pg?.stop();
  }, 60_000);

  const api = () => platform.api(KEY);

  /** What the load did, for the report and the assertions. */
  const load = {
    running: true,
    callsAnswered: [] as { id: string }[],
    callsUnanswered: 0,
    /** Answered without carrier_call_id: the carrier was slower than the request's deadline. */
    answeredBeforeDial: 0,
    legsNotFound: 0,
    agentWrites: 0,
    agentWritesUnanswered: 0,
    retries: 0,
  };

  /**
   * Sends a write under one Idempotency-Key until it is answered with `wanted`, as a client does across outages
   * (refused connections, 503, 409 while the key's first request is in flight or was interrupted); undefined when
   * it was not within `giveUpMs`. Any other answer is a failure of the test.
   */
  async function untilAnswered(send: (key: string) => Promise<ApiResponse>, wanted: number, giveUpMs: number): Promise<ApiResponse | undefined> {
    const key = randomBytes(12).toString('hex');
    const deadline = Date.now() + giveUpMs;
    for (;;) {
      const res = await send(key).catch(() => undefined);
      if (res?.status === wanted) return res;
      if (res && res.status < 500 && ![402, 409, 429].includes(res.status)) throw new Error(`refused under load: ${res.status} ${JSON.stringify(res.body)}`);
      if (Date.now() > deadline) return undefined;
      load.retries++;
      await sleep(300);
    }
  }

  /**
   * The carrier's leg of a call, found as the carrier knows it: by the call id on its status callback URL (the API
   * answers before the dial has finished when the carrier is slow, without carrier_call_id). Undefined when the call
   * was never dialled (its calls service killed in between): the calls service fails it no_media.
   */
  async function carrierLeg(callId: string, waitMs: number): Promise<string | undefined> {
    const find = async () => [...twilio.callResources.values()].find((c) => c.statusCallbackUrl && new URL(c.statusCallbackUrl).searchParams.get('call') === callId)?.sid;
    return eventually(find, waitMs, `the carrier leg of ${callId}`).catch(() => undefined);
  }

  /** Drives an answered call as a carrier and a caller would: no answer, or answered with the agent speaking, then hung up. */
  async function drive(callId: string, n: number): Promise<void> {
    const sid = await carrierLeg(callId, 10_000);
    if (!sid) {
      load.legsNotFound++;
      return;
    }
    // A callback refused while the gateway is down is found by the calls service's reconciler at the fake carrier.
    if (n % 4 === 3) {
      await twilio.sendStatusCallback(sid, 'no-answer').catch(() => undefined);
      return;
    }
    await twilio.sendStatusCallback(sid, 'ringing').catch(() => undefined);
    const media = await twilio.connectMediaStream(sid).catch(() => undefined);
    if (!media) {
      await twilio.sendStatusCallback(sid, 'completed').catch(() => undefined); // no media worker: the carrier hangs up
      return;
    }
    const until = Date.now() + 4_000;
    while (media.open && media.receivedFrames < 40 && Date.now() < until) await sleep(100);
    await media.stop(); // a killed media worker already closed it: its call is failed media_lost by the calls service
  }

  async function callWorker(w: number, agents: { id: string }[]): Promise<void> {
    for (let n = w; load.running; n += CALL_WORKERS) {
      const agent = agents[n % agents.length];
      const to = `+1555020${String(1000 + n).slice(-4)}`;
      const res = await untilAnswered((key) => api().post('/v1/calls', { agent_id: agent.id, to }, { 'idempotency-key': key }), 201, 15_000);
      if (!res) {
        load.callsUnanswered++;
        continue;
      }
      load.callsAnswered.push(res.body);
      if (!res.body.carrier_call_id) load.answeredBeforeDial++;
      await drive(res.body.id, n);
    }
  }

  async function agentWorker(): Promise<void> {
    for (let n = 0; load.running; n++) {
      const created = await untilAnswered((key) => api().post('/v1/agents', { name: `Load ${n}`, languages: [{ code: 'en' }] }, { 'idempotency-key': key }), 201, 10_000);
      const updated = created && (await untilAnswered(() => api().patch(`/v1/agents/${created.body.id}`, { name: `Load ${n} (renamed)` }), 200, 10_000));
      load.agentWrites += Number(!!created) + Number(!!updated);
      load.agentWritesUnanswered += Number(!created) + Number(!!created && !updated);
      await sleep(200);
    }
  }

  /** Until the restarted service serves again, through the gateway (or its own port, for the media worker). */
  async function serving(service: ServiceName): Promise<void> {
    const path = { gateway: '/v1/agents?limit=1', agents: '/v1/agents?limit=1', calls: '/v1/calls?limit=1', 'webhook-dispatcher': '/v1/webhook_endpoints?limit=1', 'media-worker': '' }[service];
    if (service === 'media-worker') await platform.waitReady();
    else await eventually(async () => ((await api().get(path)).status === 200 ? true : undefined), 60_000, `${service} to serve again`);
  }

  it('loses no webhook event, bounds and counts the duplicates, and keeps each event’s id and body across attempts', async () => {
    const endpoint = await api().post('/v1/webhook_endpoints', { url: receiver.url, events: ['*'] });
    expect(endpoint.status).toBe(201);
    const agents = [
      (await api().post('/v1/agents', { name: 'Front desk', languages: [{ code: 'en', greeting: 'Hello, this is the front desk.' }] })).body,
      (await api().post('/v1/agents', { name: 'Recorded desk', record_calls: true, languages: [{ code: 'en', greeting: 'Hello, this call is recorded.' }] })).body,
    ];
    const started = Date.now();
    const workers = Promise.allSettled([...Array.from({ length: CALL_WORKERS }, (_, w) => callWorker(w, agents)), agentWorker()]);

    const disruptions: string[] = [];
    const note = (what: string) => disruptions.push(`${((Date.now() - started) / 1000).toFixed(1)} s ${what}`);
    let held = { dispatcher: 0, postgres: 0 };
    try {
      for (const service of ['gateway', 'agents', 'calls', 'media-worker', 'webhook-dispatcher'] as const) {
        await sleep(BETWEEN_MS);
        if (service === 'media-worker') {
          // Killed with calls on its streams: they fail media_lost, each with its call.ended.
          await eventually(async () => (twilio.mediaStreams.some((m) => m.open && m.receivedFrames > 0) ? true : undefined), 20_000, 'a live call');
        }
        if (service === 'webhook-dispatcher') held = { ...held, dispatcher: await receiver.hold(HOLD_WAIT_MS) };
        await platform.kill(service);
        receiver.release();
        note(`SIGKILL ${service}`);
        platform.restart(service);
        await serving(service);
        note(`${service} serves again`);
      }

      await sleep(BETWEEN_MS);
      held = { ...held, postgres: await receiver.hold(HOLD_WAIT_MS) };
      await pg.shutdown();
      receiver.release(); // answered while the database is away: the dispatcher cannot record these outcomes
      note('PostgreSQL shut down');
      await sleep(2_000);
      await pg.restart();
      await serving('calls');
      note('PostgreSQL back');

      await sleep(BETWEEN_MS);
      await nats.kill();
      note('NATS killed');
      await sleep(2_000);
      await nats.restart();
      await platform.waitReady();
      note('NATS back');
      await sleep(BETWEEN_MS);
    } catch (error) {
      const { callsAnswered, ...counts } = load;
      const progress = `calls answered ${callsAnswered.length}, ${JSON.stringify(counts)}, held ${JSON.stringify(held)}, receiver requests ${receiver.requests.length}, the last at ${((receiver.requests.at(-1)?.at ?? started) - started) / 1000} s`;
      throw new Error(`${(error as Error).message}\n${progress}\n${disruptions.join('\n')}\n${platform.logs()}`);
    } finally {
      receiver.release();
      load.running = false;
    }
    for (const outcome of await workers) if (outcome.status === 'rejected') throw outcome.reason;
    note('load stopped');

    const db = new Client({ connectionString: platform.databaseUrl });
    await db.connect();
    try {
      // Calls whose answer the load never got (a gateway killed mid-request) were dialled too: the carrier says no answer.
      const { rows: live } = await db.query(`SELECT id FROM calls.calls WHERE status IN ('queued', 'ringing')`);
      for (const { id } of live) {
        const sid = await carrierLeg(id, 0);
        if (sid) await twilio.sendStatusCallback(sid, 'no-answer').catch(() => undefined);
      }
      await eventually(
        async () => ((await db.query(`SELECT count(*)::int AS n FROM calls.calls WHERE status NOT IN ('ended', 'failed')`)).rows[0].n === 0 ? true : undefined),
        (CALL_STUCK_SECONDS + 5 + 20) * 1000,
        'every call to be final',
      ).catch(async (error) => {
        const { rows } = await db.query(`SELECT * FROM calls.calls WHERE status NOT IN ('ended', 'failed')`);
        throw new Error(`${(error as Error).message}: ${JSON.stringify(rows)}\n${disruptions.join('\n')}\n${platform.logs()}`);
      });
      note('every call final');

      // Every event the platform committed is in the calls service's outbox (the only producer of webhook events).
      const outbox = async () =>
        (await db.query(`SELECT message_id, payload, published_at FROM calls.outbox WHERE subject LIKE 'parley.events.%' ORDER BY seq`)).rows as {
          message_id: string;
          payload: WebhookEvent;
          published_at: Date | null;
        }[];
      const taken = () => new Set(receiver.requests.filter((r) => r.taken).map((r) => r.id));
      const drained = await eventually(
        async () => {
          const events = await outbox();
          const got = taken();
          if (!events.every((e) => e.published_at && got.has(e.message_id))) return undefined;
          // Settled too: an attempt whose outcome was lost is still pending, and is sent again once its lease ends.
          const [{ n: pending }] = (await db.query(`SELECT count(*)::int AS n FROM webhooks.deliveries WHERE state = 'pending'`)).rows;
          return pending === 0 ? events : undefined;
        },
        90_000,
        'every event of the outbox to be delivered and settled',
      ).catch(async (error) => {
        const got = taken();
        const missing = (await outbox()).filter((e) => !got.has(e.message_id));
        const { rows } = await db.query(`SELECT state, attempts, count(*)::int AS n FROM webhooks.deliveries WHERE event_id = ANY($1) GROUP BY 1, 2`, [missing.map((e) => e.message_id)]);
        throw new Error(`${(error as Error).message}: ${missing.length} missing (${JSON.stringify(missing.slice(0, 5))}), their deliveries ${JSON.stringify(rows)}\n${disruptions.join('\n')}\n${platform.logs()}`);
      });
      note('every event delivered and settled');

      const events = new Map(drained.map((e) => [e.message_id, e.payload]));
      const requests = receiver.requests;
      const takenPerEvent = new Map<string, number>();
      for (const r of requests) if (r.taken) takenPerEvent.set(r.id, (takenPerEvent.get(r.id) ?? 0) + 1);
      const duplicates = [...takenPerEvent.values()].reduce((sum, n) => sum + n - 1, 0);
      const mostTimes = Math.max(...takenPerEvent.values());
      // Parked messages: an outbox row the calls service's relay parks leaves its outbox (and would be lost to the
      // receiver until replayed); the dispatcher parks events it cannot accept.
      const [{ n: deadLetters }] = (
        await db.query(`SELECT (SELECT count(*) FROM calls.dead_letters)::int + (SELECT count(*) FROM webhooks.dead_letters)::int AS n`)
      ).rows;
      const { rows: states } = await db.query(`SELECT state, count(*)::int AS n FROM webhooks.deliveries GROUP BY 1 ORDER BY 1`);
      console.log(
        [
          `kill under load: ${events.size} events committed, ${takenPerEvent.size} delivered, ${requests.length} requests, ${requests.filter((r) => !r.taken).length} first attempts refused`,
          `  duplicates ${duplicates} (bound ${OUTCOME_LOSING_DISRUPTIONS * PER_ENDPOINT_CONCURRENCY}), most deliveries of one event ${mostTimes} (bound ${1 + OUTCOME_LOSING_DISRUPTIONS});` +
            ` attempts held at the dispatcher kill ${held.dispatcher}, at the PostgreSQL shutdown ${held.postgres}`,
          `  calls answered ${load.callsAnswered.length} (${load.answeredBeforeDial} before the dial ended, ${load.legsNotFound} never dialled), unanswered ${load.callsUnanswered}; agent writes ${load.agentWrites}, unanswered ${load.agentWritesUnanswered}; retried requests ${load.retries}`,
          `  deliveries ${JSON.stringify(states)}, dead letters (calls and webhooks) ${deadLetters}`,
          ...disruptions.map((d) => `  ${d}`),
        ].join('\n'),
      );

      // Nothing lost, nothing foreign, nothing parked or given up.
      expect([...events.keys()].filter((id) => !takenPerEvent.has(id))).toEqual([]);
      expect(requests.filter((r) => !events.has(r.id))).toEqual([]);
      expect(deadLetters).toBe(0);
      expect(states).toEqual([{ state: 'succeeded', n: events.size }]);

      // Duplicates: bounded as argued above, and they did happen (attempts were held at both disruptions).
      expect(held.dispatcher).toBeGreaterThan(0);
      expect(held.postgres).toBeGreaterThan(0);
      expect(duplicates).toBeGreaterThanOrEqual(held.dispatcher + held.postgres); // each held attempt's outcome was lost
      expect(duplicates).toBeLessThanOrEqual(OUTCOME_LOSING_DISRUPTIONS * PER_ENDPOINT_CONCURRENCY);
      expect(mostTimes).toBeLessThanOrEqual(1 + OUTCOME_LOSING_DISRUPTIONS);

      // One id and one body per event on every attempt, retries included: the committed event, as published.
      for (const r of requests) {
        expect(JSON.parse(r.body)).toEqual(publicEnvelope(events.get(r.id) as WebhookEvent));
        expect(r.body).toBe(requests.find((first) => first.id === r.id)?.body);
      }
      expect(requests.some((r) => r.attempt > 1)).toBe(true);
      // A repeat after a lost outcome is the same attempt again: its number is not advanced.
      for (const [id, times] of takenPerEvent) {
        if (times > 1) expect(new Set(requests.filter((r) => r.id === id && r.taken).map((r) => r.attempt)).size).toBe(1);
      }

      // Every call the platform answered ended once: exactly one call.ended event (by id) each, at most one call.started.
      expect(load.callsAnswered.length).toBeGreaterThan(10);
      const ofCall = (callId: string, type: string) => [...events.values()].filter((e) => e.call_id === callId && e.type === type);
      for (const call of load.callsAnswered) {
        expect(ofCall(call.id, 'call.ended')).toHaveLength(1);
        expect(ofCall(call.id, 'call.started').length).toBeLessThanOrEqual(1);
      }
      expect(disruptions.filter((d) => d.includes('SIGKILL'))).toHaveLength(5);
    } finally {
      await db.end();
    }
  }, 360_000);
});
