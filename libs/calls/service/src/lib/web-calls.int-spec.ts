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

/** Agents of acc_1: agt_talk converses, agt_keys answers keypresses, agt_fwd only forwards to a number, agt_meet introduces two browsers. */
const SPECS: Record<string, string> = {
  agt_talk: '{"mode":"conversation"}',
  agt_meet: '{"mode":"webrtc"}',
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
  let control: CallControl;
  const workers = new FakeMediaWorkers();
  const config = new ServiceConfig();

  beforeAll(async () => {
    Object.assign(config, { SECRET_KEY: 'x'.repeat(40), PUBLIC_URL: 'https://parley.example', MEDIA_PUBLIC_URL: 'wss://media.parley.example', MAX_CONCURRENT_CALLS: 1000 });
    db = await createTestDatabase('parley_webcalls');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    const bus = new InProcessBus();
    bus.open();
    relay = new OutboxRelay(dataSource, bus);
    const repository = new CallsRepository(dataSource);
    calls = new CallsDomain(repository, relay, bus, config, workers.commands);
    const admission = new CallAdmission(bus, repository, config);
    control = new CallControl(calls, CarrierRegistry.fromConfig(config), agents, config, admission);
    web = new WebCalls(calls, control, admission, config);
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

    const { call: joined } = await web.join(token.token, call.id, '10.0.0.1:50053');
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

  describe('rendezvous: two browsers take the seats of a webrtc agent’s call', () => {
    const claimsOf = (token: string) => JSON.parse(Buffer.from(token.slice(4).split('.')[0], 'base64url').toString()) as Record<string, unknown>;
    const eventsOf = async (callId: string) =>
      ((await dataSource.getRepository(OutboxRecord).find()) as OutboxRecord[])
        .map((r) => r.payload as { type: string; call_id: string })
        .filter((e) => e.call_id === callId);

    it('records a queued web call with two untaken seats, a and b unless named, and answers a repeated Idempotency-Key with it', async () => {
      const call = await web.rendezvous('acc_1', { agentId: 'agt_meet', variables: { topic: 'visa' }, metadata: { room: '7' } });
      expect(call).toMatchObject({ direction: 'web', status: 'queued', carrier: 'web', variables: { topic: 'visa' }, metadata: { room: '7' } });
      expect(call.seats).toEqual([{ name: 'a', taken: false }, { name: 'b', taken: false }]);
      expect((await calls.get('acc_1', call.id)).seats).toEqual(call.seats);

      const named = await web.rendezvous('acc_1', { agentId: 'agt_meet', seats: ['doctor', 'patient_1'], idempotencyKey: 'meet-key-1' });
      expect(named.seats?.map((s) => s.name)).toEqual(['doctor', 'patient_1']);
      expect((await web.rendezvous('acc_1', { agentId: 'agt_meet', seats: ['doctor', 'patient_1'], idempotencyKey: 'meet-key-1' })).id).toBe(named.id);
      await expect(web.place('acc_1', { agentId: 'agt_talk', idempotencyKey: 'meet-key-1' })).rejects.toMatchObject({ code: 'idempotency_conflict' });
    });

    it('refuses an agent that is not webrtc (naming agent_id) and seats that are not two distinct names', async () => {
      await expect(web.rendezvous('acc_1', { agentId: 'agt_talk' })).rejects.toMatchObject({ code: 'validation_error', errors: [{ field: 'agent_id' }] });
      await expect(web.rendezvous('acc_2', { agentId: 'agt_meet' })).rejects.toMatchObject({ code: 'validation_error', errors: [{ field: 'agent_id' }] });
      await expect(web.rendezvous('acc_1', { agentId: 'agt_meet', seats: ['a'] })).rejects.toMatchObject({ errors: [{ field: 'seats' }] });
      await expect(web.rendezvous('acc_1', { agentId: 'agt_meet', seats: ['a', 'a'] })).rejects.toMatchObject({ errors: [{ field: 'seats' }] });
      await expect(web.rendezvous('acc_1', { agentId: 'agt_meet', seats: ['a', 'b', 'c'] })).rejects.toMatchObject({ errors: [{ field: 'seats' }] });
      await expect(web.rendezvous('acc_1', { agentId: 'agt_meet', seats: ['a', 'B c'] })).rejects.toMatchObject({ errors: [{ field: 'seats[1]' }] });
      // A browser cannot talk to a webrtc agent as to a model.
      await expect(web.place('acc_1', { agentId: 'agt_meet' })).rejects.toMatchObject({ errors: [{ field: 'agent_id' }] });
    });

    it('mints a seat token (role seat, the seat in its claims); the first seat joined rings the call, the second answers it with call.started', async () => {
      const call = await web.rendezvous('acc_1', { agentId: 'agt_meet' });
      const a = await web.seat('acc_1', call.id, 'a');
      expect(a.token).toMatchObject({ role: 'seat', seat: 'a' });
      expect(claimsOf(a.token.token)).toMatchObject({ role: 'seat', seat: 'a', call_id: call.id, account_id: 'acc_1' });

      const first = await web.join(a.token.token, call.id, '10.0.0.1:50053');
      expect(first).toMatchObject({ seat: 'a', call: { status: 'ringing', seats: [{ name: 'a', taken: true }, { name: 'b', taken: false }] } });
      expect((await eventsOf(call.id)).map((e) => e.type)).not.toContain('call.started');

      const second = await web.join((await web.seat('acc_1', call.id, 'b')).token.token, call.id, '10.0.0.1:50053');
      expect(second).toMatchObject({ seat: 'b', call: { status: 'in_progress', seats: [{ name: 'a', taken: true }, { name: 'b', taken: true }] } });
      expect((await eventsOf(call.id)).map((e) => e.type)).toContain('call.started');
      expect((await calls.get('acc_1', call.id)).mediaWorker).toBe('10.0.0.1:50053');
    });

    it('refuses a taken seat (409), a seat it does not have (naming seat), a call that is not a rendezvous (409) and another account’s call (404)', async () => {
      const call = await web.rendezvous('acc_1', { agentId: 'agt_meet' });
      const spare = await web.seat('acc_1', call.id, 'a');
      await web.join((await web.seat('acc_1', call.id, 'a')).token.token, call.id, '');
      await expect(web.seat('acc_1', call.id, 'a')).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('taken') });
      // A second token minted for the seat before it was taken cannot put another browser in it.
      expect(await refusalOf(web.join(spare.token.token, call.id, ''))).toBe('token_forbidden');
      await expect(web.seat('acc_1', call.id, 'c')).rejects.toMatchObject({ code: 'validation_error', errors: [{ field: 'seat' }] });
      await expect(web.seat('acc_2', call.id, 'b')).rejects.toMatchObject({ code: 'not_found' });

      const plain = await web.place('acc_1', { agentId: 'agt_talk' });
      await expect(web.seat('acc_1', plain.call.id, 'a')).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('not a rendezvous') });
      // Nor is a rendezvous joined as a web call.
      await expect(web.mint('acc_1', call.id, 'caller')).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('rendezvous') });
    });

    it('refuses a seat token whose window passed or that was used, and any seat once the call is over', async () => {
      const call = await web.rendezvous('acc_1', { agentId: 'agt_meet' });
      const { token } = await web.seat('acc_1', call.id, 'a');
      const now = Date.now();
      jest.spyOn(Date, 'now').mockReturnValue(now + 61_000);
      expect(await refusalOf(web.join(token.token, call.id, ''))).toBe('token_expired');
      jest.restoreAllMocks();
      await web.join(token.token, call.id, '');
      expect(await refusalOf(web.join(token.token, call.id, ''))).toBe('token_used');

      const b = await web.seat('acc_1', call.id, 'b');
      await control.end('acc_1', call.id, 'hangup');
      expect(await refusalOf(web.join(b.token.token, call.id, ''))).toBe('call_over');
      await expect(web.seat('acc_1', call.id, 'b')).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('over') });
    });

    it('ends a ringing rendezvous no_answer when it is given up (the ring running out, or POST give-up), with call.ended, and tells its worker', async () => {
      const call = await web.rendezvous('acc_1', { agentId: 'agt_meet' });
      await web.join((await web.seat('acc_1', call.id, 'a')).token.token, call.id, '10.0.0.9:50053');
      const ended = await control.end('acc_1', call.id, 'given_up');
      expect(ended).toMatchObject({ status: 'ended', endReason: 'no_answer' });
      expect((await eventsOf(call.id)).filter((e) => e.type === 'call.ended')).toHaveLength(1);
      await new Promise((r) => setTimeout(r, 50));
      expect(workers.about(call.id)).toMatchObject([{ address: '10.0.0.9:50053', command: 'end_stream' }]);

      // Nobody seated yet: given up as well; answered: it must be ended instead.
      const empty = await web.rendezvous('acc_1', { agentId: 'agt_meet' });
      expect(await control.end('acc_1', empty.id, 'given_up')).toMatchObject({ endReason: 'no_answer' });
      const met = await web.rendezvous('acc_1', { agentId: 'agt_meet' });
      for (const seat of ['a', 'b']) await web.join((await web.seat('acc_1', met.id, seat)).token.token, met.id, '');
      await expect(control.end('acc_1', met.id, 'given_up')).rejects.toMatchObject({ code: 'conflict' });
    });
  });
});
