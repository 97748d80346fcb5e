import { randomBytes } from 'node:crypto';
import { createServer, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { WebhookEvent, webhookEventSubject } from '@parley/contracts';
import { JetStreamBus } from '@parley/messaging';
import { newId } from '@parley/persistence';
import { RunningPlatform } from '@parley/testing';

/*
 * The disable rule and soft delete across real processes: events reach the dispatcher over JetStream, the
 * endpoint is disabled or deleted through the gateway while the dispatcher's attempts hang at the receiver, and
 * the dispatcher (another process) must abandon them.
 */

const describeWithNats = process.env['NATS_URL'] ? describe : describe.skip;
const ACCOUNT = `promises_${randomBytes(4).toString('hex')}`;
const KEY = `vsk_promises_owner_${randomBytes(8).toString('hex')}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Holds every request open until released; counts requests the sender aborted. */
class HoldingReceiver {
  readonly events: string[] = [];
  aborted = 0;
  hold = true;
  private readonly held: ServerResponse[] = [];
  private readonly server: Server = createServer((req, res) => {
    req.resume();
    this.events.push(String(req.headers['service-event-id']));
    res.on('close', () => {
      if (!res.writableFinished) this.aborted++;
    });
    if (this.hold) this.held.push(res);
    else res.writeHead(200).end();
  });

  static async start(): Promise<HoldingReceiver> {
    const r = new HoldingReceiver();
    await new Promise<void>((resolve) => r.server.listen(0, '127.0.0.1', resolve));
    return r;
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/${path}`;
  }

  release(): void {
    for (const res of this.held.splice(0)) if (!res.destroyed) res.writeHead(200).end();
  }

  close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    return closed;
  }
}

function callStarted(): WebhookEvent<'call.started'> {
  return {
    id: newId('evt'),
    type: 'call.started',
    call_id: newId('call'),
    created_at: new Date().toISOString(),
    data: { agent_id: 'agt_promises', direction: 'outbound', to: '+15550100001', from: '+15550100002' },
    account_id: ACCOUNT,
    agent_id: null,
  };
}

describeWithNats('webhook promises across processes (distributed platform)', () => {
  let platform: RunningPlatform;
  let receiver: HoldingReceiver;
  let bus: JetStreamBus;

  beforeAll(async () => {
    receiver = await HoldingReceiver.start();
    platform = await RunningPlatform.start({
      mode: 'distributed',
      bootstrapKeys: [`${ACCOUNT}:owner:${KEY}`],
      env: { EGRESS_ALLOWLIST: '127.0.0.1', WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1' },
    });
    bus = await JetStreamBus.connect(process.env['NATS_URL'] as string, 'promises-producer', platform.natsNamespace);
  }, 90_000);

  afterAll(async () => {
    await bus?.close().catch(() => undefined);
    await platform?.stop();
    receiver?.release();
    await receiver?.close();
  }, 30_000);

  const api = () => platform.api(KEY);
  const publish = async (n: number): Promise<string[]> => {
    const events = Array.from({ length: n }, callStarted);
    for (const e of events) await bus.publish(webhookEventSubject('call.started').name, e, { id: e.id });
    return events.map((e) => e.id);
  };
  const history = async (id: string): Promise<{ event_id: string; outcome: string }[]> =>
    (await api().get(`/v1/webhook_endpoints/${id}/deliveries?limit=100`)).body.data;
  const outcomes = async (id: string) => (await history(id)).map((h) => h.outcome).sort();

  it('disabling aborts the attempts in flight in the dispatcher process, records events meanwhile as skipped, and resumes nothing on re-enable', async () => {
    const endpoint = (await api().post('/v1/webhook_endpoints', { url: receiver.url('disable'), events: ['call.started'] })).body;
    const before = receiver.aborted;
    const inFlight = await publish(3);
    await waitFor(() => inFlight.every((id) => receiver.events.includes(id)), 20_000, 'three attempts in flight');

    const disabledAt = Date.now();
    expect((await api().patch(`/v1/webhook_endpoints/${endpoint.id}`, { enabled: false })).body).toMatchObject({ enabled: false });
    await waitFor(() => receiver.aborted - before === 3, 5_000, 'the dispatcher to abort its three requests');
    expect(Date.now() - disabledAt).toBeLessThan(5_000);
    await waitFor(async () => (await outcomes(endpoint.id)).length === 6, 10_000, 'the abandoned attempts in the history');
    expect(await outcomes(endpoint.id)).toEqual(['aborted', 'aborted', 'aborted', 'cancelled', 'cancelled', 'cancelled']);

    const [whileDisabled] = await publish(1);
    await waitFor(async () => (await history(endpoint.id)).some((h) => h.event_id === whileDisabled && h.outcome === 'skipped'), 20_000, 'a skipped entry');

    receiver.hold = false;
    expect((await api().patch(`/v1/webhook_endpoints/${endpoint.id}`, { enabled: true })).body).toMatchObject({ enabled: true, disabled_reason: null });
    const [after] = await publish(1);
    await waitFor(() => receiver.events.includes(after), 20_000, 'the event after re-enabling');
    // Retries of the abandoned attempts would have been due after 1 s: none comes, nor the skipped event.
    await sleep(2_500);
    const sent = receiver.events.filter((id) => [...inFlight, whileDisabled, after].includes(id));
    expect(sent.sort()).toEqual([...inFlight, after].sort());
    receiver.hold = true;
  }, 90_000);

  it('deleting aborts the attempts in flight without failures, and the deleted endpoint’s history stays readable', async () => {
    const endpoint = (await api().post('/v1/webhook_endpoints', { url: receiver.url('delete'), events: ['call.started'] })).body;
    const before = receiver.aborted;
    const inFlight = await publish(2);
    await waitFor(() => inFlight.every((id) => receiver.events.includes(id)), 20_000, 'two attempts in flight');

    expect((await api().delete(`/v1/webhook_endpoints/${endpoint.id}`)).status).toBe(200);
    await waitFor(() => receiver.aborted - before === 2, 5_000, 'the dispatcher to abort its two requests');
    expect((await api().get(`/v1/webhook_endpoints/${endpoint.id}`)).status).toBe(404);
    await waitFor(async () => (await outcomes(endpoint.id)).length === 4, 10_000, 'the abandoned attempts in the history');
    expect(await outcomes(endpoint.id)).toEqual(['aborted', 'aborted', 'cancelled', 'cancelled']);
    expect(platform.logs()).not.toMatch(/foreign key|attempt failed/);
  }, 60_000);
});
