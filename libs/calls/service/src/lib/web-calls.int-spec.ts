import { ClientGrpc } from '@nestjs/microservices';
import { of } from 'rxjs';
import { DataSource } from 'typeorm';
import { ServiceConfig } from '@parley/config';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallAdmission } from './call-admission';
import { CallControl } from './call-control';
import { CallsDomain } from './calls.domain';
import { CallsRepository } from './calls.repository';
import { CarrierRegistry } from './carrier-registry';
import { CallEntity, CallTurnEntity } from './entities';
import { CALLS_MIGRATIONS } from './migrations';
import { FakeMediaWorkers } from './testing/fake-media-workers';
import { WebCalls } from './web-calls';

/** Agents of acc_1: agt_talk converses, agt_keys answers keypresses, agt_fwd only forwards to a number. */
const SPECS: Record<string, string> = {
  agt_talk: '{"mode":"conversation"}',
  agt_keys: '{"mode":"keypad"}',
  agt_fwd: '{"mode":"normal"}',
};
const agents = {
  getService: () => ({
    getAgent: (req: { account_id: string; id: string }) =>
      of({ agent: req.account_id === 'acc_1' && SPECS[req.id] ? { effective_json: '{"record_calls":true}', spec_json: SPECS[req.id] } : undefined }),
  }),
} as unknown as ClientGrpc;

/** The refusal a join was refused with (AppError extra `refusal`, the realtime socket's close code). */
const refusalOf = (join: Promise<unknown>) =>
  join.then(
    () => 'joined',
    (error: unknown) => (error instanceof AppError ? (error.extra?.['refusal'] as string) : String(error)),
  );

describe('web calls: a browser joins with a realtime token (real PostgreSQL)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let relay: OutboxRelay;
  let calls: CallsDomain;
  let web: WebCalls;
  const config = new ServiceConfig();

  beforeAll(async () => {
    Object.assign(config, { SECRET_KEY: 'x'.repeat(40), PUBLIC_URL: 'https://parley.example', MEDIA_PUBLIC_URL: 'wss://media.parley.example' });
    db = await createTestDatabase('parley_webcalls');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    const bus = new InProcessBus();
    bus.open();
    relay = new OutboxRelay(dataSource, bus);
    const repository = new CallsRepository(dataSource);
    calls = new CallsDomain(repository, relay, bus, config, new FakeMediaWorkers().commands);
    const admission = new CallAdmission(bus, repository, config);
    web = new WebCalls(calls, new CallControl(calls, CarrierRegistry.fromConfig(config), agents, config, admission), admission, config);
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
  });

  afterEach(() => jest.restoreAllMocks());

  it('records a queued web call with a token that answers it once, within its window, and says call.started', async () => {
    const { call, token } = await web.place('acc_1', { agentId: 'agt_talk', variables: { name: 'Sam' }, metadata: { page: 'pricing' } });
    expect(call).toMatchObject({ direction: 'web', status: 'queued', carrier: 'web', recordingEnabled: true, variables: { name: 'Sam' } });
    expect(token.token).toMatch(/^rtk_[\w-]+\.[\w-]+$/);
    expect(token.role).toBe('caller');
    expect(token.expiresAt.getTime() - Date.now()).toBeGreaterThan(55_000);
    expect(token.expiresAt.getTime() - Date.now()).toBeLessThanOrEqual(60_000);
    // The token carries no secret: its claims are the call, the account, the role and its own id.
    const claims = JSON.parse(Buffer.from(token.token.slice(4).split('.')[0], 'base64url').toString()) as Record<string, unknown>;
    expect(Object.keys(claims).sort()).toEqual(['account_id', 'call_id', 'exp', 'jti', 'role']);

    const joined = await web.join(token.token, call.id, '10.0.0.1:50053');
    expect(joined).toMatchObject({ id: call.id, status: 'in_progress' });
    const events = ((await dataSource.getRepository(OutboxRecord).find()) as OutboxRecord[]).map((r) => r.payload as { type: string; call_id: string });
    expect(events.filter((e) => e.call_id === call.id).map((e) => e.type)).toContain('call.started');

    expect(await refusalOf(web.join(token.token, '', ''))).toBe('token_used');
  });

  it('refuses a token whose window passed, a forged one, an API key, and one for another call, each for what it is', async () => {
    const { call, token } = await web.place('acc_1', { agentId: 'agt_talk' });
    const other = await web.place('acc_1', { agentId: 'agt_talk' });
    const [body, mac] = token.token.split('.');
    expect(await refusalOf(web.join(`${body}.${mac.slice(0, -2)}AA`, '', ''))).toBe('token_invalid');
    expect(await refusalOf(web.join('vsk_live_0123456789', '', ''))).toBe('token_invalid');
    expect(await refusalOf(web.join(token.token.slice(4), '', ''))).toBe('token_invalid');
    expect(await refusalOf(web.join(token.token, other.call.id, ''))).toBe('token_forbidden');

    const now = Date.now();
    jest.spyOn(Date, 'now').mockReturnValue(now + 61_000);
    expect(await refusalOf(web.join(token.token, call.id, ''))).toBe('token_expired');
    jest.restoreAllMocks();
    // None of the refusals used the token up.
    expect(await refusalOf(web.join(token.token, call.id, ''))).toBe('joined');
  });

  it('refuses a token for a call that is over', async () => {
    const { call, token } = await web.place('acc_1', { agentId: 'agt_talk' });
    await calls.transition('acc_1', call.id, () => ({ status: 'ended', endReason: 'canceled' }));
    expect(await refusalOf(web.join(token.token, call.id, ''))).toBe('call_over');
  });

  it('mints another token for a web call nobody joined, and refuses one once a browser is on it or for a phone call', async () => {
    const { call, token } = await web.place('acc_1', { agentId: 'agt_keys' });
    const again = await web.mint('acc_1', call.id, 'caller');
    expect(again.token.token).not.toBe(token.token);
    await web.join(again.token.token, call.id, '');
    await expect(web.mint('acc_1', call.id, 'caller')).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('already') });
    // The first token, unused, cannot put a second browser on the call.
    expect(await refusalOf(web.join(token.token, call.id, ''))).toBe('token_forbidden');
    // Another account does not see the call at all.
    await expect(web.mint('acc_2', call.id, 'caller')).rejects.toMatchObject({ code: 'not_found' });
    const phone = await calls.insert({
      accountId: 'acc_1',
      agentId: 'agt_talk',
      direction: 'outbound',
      to: '+15550100000',
      from: '+15550009999',
      status: 'queued',
      carrier: 'twilio',
      carrierCallId: null,
      recordingEnabled: false,
      variables: {},
      metadata: {},
    });
    await expect(web.mint('acc_1', phone.id, 'caller')).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('not supported yet') });
  });

  it('refuses a web call to an agent a browser cannot talk to, or to no agent of the account', async () => {
    await expect(web.place('acc_1', { agentId: 'agt_fwd' })).rejects.toMatchObject({ code: 'validation_error', errors: [{ field: 'agent_id' }] });
    await expect(web.place('acc_2', { agentId: 'agt_talk' })).rejects.toMatchObject({ code: 'validation_error', errors: [{ field: 'agent_id' }] });
  });

  it('answers a repeated Idempotency-Key with the same call and a fresh token', async () => {
    const first = await web.place('acc_1', { agentId: 'agt_talk', idempotencyKey: 'web-key-1' });
    const second = await web.place('acc_1', { agentId: 'agt_talk', idempotencyKey: 'web-key-1' });
    expect(second.call.id).toBe(first.call.id);
    expect(second.token.token).not.toBe(first.token.token);
    await expect(web.place('acc_1', { agentId: 'agt_keys', idempotencyKey: 'web-key-1' })).rejects.toMatchObject({ code: 'idempotency_conflict' });
  });
});
