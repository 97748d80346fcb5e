import { ClientGrpc } from '@nestjs/microservices';
import { of } from 'rxjs';
import { DataSource } from 'typeorm';
import { FakeTwilioServer, signedTwilioWebhook } from '@parley/carrier-twilio';
import { CONSOLE_SESSION_MAX_SECONDS, CONSOLE_TOKEN_TTL_SECONDS, LIVE, RingingActivity } from '@parley/contracts';
import { resolveSecretKey, ServiceConfig } from '@parley/config';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { openServiceDatabase, SignedTokens } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallAdmission } from './call-admission';
import { CallControl } from './call-control';
import { CallsDomain } from './calls.domain';
import { CallsGrpcController } from './calls.grpc-controller';
import { CallsRepository } from './calls.repository';
import { CarrierRegistry } from './carrier-registry';
import { CallEntity, CallTurnEntity } from './entities';
import { CALLS_MIGRATIONS } from './migrations';
import { FakeMediaWorkers } from './testing/fake-media-workers';
import { WebCalls } from './web-calls';

/** Agents of acc_1 and acc_2: agt_simple hands inbound calls to a person, agt_talk answers with a model, agt_meet introduces two browsers. */
const AGENTS: Record<string, { effective_json: string; spec_json: string }> = {
  agt_simple: { effective_json: '{"autonomy":"simple"}', spec_json: '{"mode":"conversation","autonomy":"simple","ring_seconds":20}' },
  agt_talk: { effective_json: '{}', spec_json: '{"mode":"conversation"}' },
  agt_meet: { effective_json: '{}', spec_json: '{"mode":"webrtc"}' },
};
const OWNER: Record<string, string> = { agt_simple: 'acc_1', agt_talk: 'acc_1', agt_meet: 'acc_1', agt_simple2: 'acc_2' };
const agents = {
  getService: () => ({
    getAgent: (req: { account_id: string; id: string }) => of({ agent: OWNER[req.id] === req.account_id ? AGENTS[req.id.replace(/2$/, '')] : undefined }),
    locateAgent: (req: { id: string }) => of({ account_id: OWNER[req.id] }),
  }),
} as unknown as ClientGrpc;

const refusalOf = (join: Promise<unknown>) =>
  join.then(
    () => 'joined',
    (error: unknown) => (error instanceof AppError ? (error.extra?.['refusal'] as string) : String(error)),
  );
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.slice(4).split('.')[0], 'base64url').toString()) as Record<string, unknown>;
const settle = () => new Promise((r) => setTimeout(r, 30));

describe('ringing and claim: calls a person answers (real PostgreSQL)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let relay: OutboxRelay;
  let bus: InProcessBus;
  let calls: CallsDomain;
  let control: CallControl;
  let web: WebCalls;
  let grpc: CallsGrpcController;
  const workers = new FakeMediaWorkers();
  const twilio = new FakeTwilioServer();
  const config = new ServiceConfig();
  let sid = 0;

  beforeAll(async () => {
    Object.assign(config, {
      SECRET_KEY: 'x'.repeat(40),
      ...(await twilio.platformEnv()),
      PUBLIC_URL: 'https://parley.example',
      MEDIA_PUBLIC_URL: 'wss://media.parley.example',
      MAX_CONCURRENT_CALLS: 1000,
    });
    db = await createTestDatabase('parley_ringing');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    bus = new InProcessBus();
    bus.open();
    relay = new OutboxRelay(dataSource, bus);
    const repository = new CallsRepository(dataSource);
    calls = new CallsDomain(repository, relay, bus, config, workers.commands);
    const admission = new CallAdmission(bus, repository, config);
    control = new CallControl(calls, CarrierRegistry.fromConfig(config), agents, config, admission);
    web = new WebCalls(calls, control, admission, config);
    grpc = new CallsGrpcController(calls, control, web);
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
    await twilio.stop();
  });

  afterEach(() => jest.restoreAllMocks());

  /** An inbound Twilio call to `agentId`, recorded by its voice webhook; its stream token is in the answer's markup. */
  async function inbound(agentId: string): Promise<{ call: CallEntity; streamToken: string; carrierCallId: string }> {
    const url = `https://parley.example/carriers/twilio/voice/${agentId}`;
    const carrierCallId = `CA${String(++sid).padStart(32, '0')}`;
    const params = { CallSid: carrierCallId, From: '+15550177777', To: '+15550009999', CallStatus: 'ringing', Direction: 'inbound' };
    const answer = await control.handleWebhook({ carrier: 'twilio', kind: 'voice', url, headers: signedTwilioWebhook(url, params, twilio.authToken).headers, params, agent_id: agentId });
    const streamToken = /name="token" value="([^"]+)"/.exec(answer.body)?.[1] ?? '';
    const call = (await calls.findByCarrierCall('twilio', carrierCallId)) as CallEntity;
    return { call, streamToken, carrierCallId };
  }

  /** An inbound call to the simple agent whose caller is on the line (its stream attached on `worker`), waiting for a claim. */
  async function ringingCall(agentId = 'agt_simple', worker = '10.0.0.7:50053'): Promise<CallEntity> {
    const { streamToken, carrierCallId } = await inbound(agentId);
    return (await control.attachMedia(streamToken, 'twilio', carrierCallId, worker)).call;
  }

  /** What LIVE.ringing(account) broadcasts while `run` runs. */
  async function heard(accountId: string, run: () => Promise<unknown>): Promise<RingingActivity[]> {
    const activity: RingingActivity[] = [];
    const stop = await bus.listen(LIVE.ringing(accountId).name, (payload) => activity.push(payload as RingingActivity));
    try {
      await run();
      await settle();
    } finally {
      stop();
    }
    return activity;
  }

  const outboxTypes = async (callId: string) =>
    ((await dataSource.getRepository(OutboxRecord).find()) as OutboxRecord[]).map((r) => r.payload as { type: string; call_id: string }).filter((e) => e.call_id === callId).map((e) => e.type);

  describe('ringing', () => {
    it('keeps an inbound call to a simple agent ringing when its stream attaches, tells the worker to await the claim and announces it', async () => {
      const { call, streamToken, carrierCallId } = await inbound('agt_simple');
      expect(call).toMatchObject({ status: 'ringing', claimable: true, claimedBy: null, claimedAt: null });

      let attached: Awaited<ReturnType<CallsGrpcController['attachMedia']>> | undefined;
      const activity = await heard('acc_1', async () => {
        attached = await grpc.attachMedia({ stream_token: streamToken, carrier: 'twilio', carrier_call_id: carrierCallId, command_address: '10.0.0.7:50053' });
      });
      expect(attached).toMatchObject({ role: 'carrier', await_claim: true, call: { id: call.id, status: 'ringing', claimable: true, claimed_by: '', claimed_at: '' } });
      expect(activity).toEqual([{ kind: 'ringing', call: expect.objectContaining({ id: call.id, status: 'ringing' }) }]);
      expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'ringing', mediaWorker: '10.0.0.7:50053' });

      // The carrier answered its leg (the caller hears ringback): the call still waits for its claim.
      const params = twilio.statusCallbackParams(carrierCallId, 'in-progress');
      const url = 'https://parley.example/carriers/twilio/status';
      await control.handleWebhook({ carrier: 'twilio', kind: 'status', url, headers: signedTwilioWebhook(url, params, twilio.authToken).headers, params, agent_id: '' });
      expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'ringing' });
      expect(await outboxTypes(call.id)).not.toContain('call.started');
    });

    it('rings a web call to a simple agent for a person once its browser joined, and lets one claim it', async () => {
      const placed = await web.place('acc_1', { agentId: 'agt_simple' });
      expect(placed.call).toMatchObject({ status: 'queued', claimable: true });
      const announced = await heard('acc_1', async () => {
        const joined = await grpc.attachMedia({ stream_token: placed.token.token, carrier: 'web', carrier_call_id: placed.call.id, command_address: '10.0.0.9:50053' });
        expect(joined).toMatchObject({ role: 'caller', await_claim: true, call: { status: 'ringing', claimable: true } });
      });
      expect(announced).toEqual([expect.objectContaining({ kind: 'ringing', call: expect.objectContaining({ id: placed.call.id }) })]);
      expect((await grpc.listRinging({ account_id: 'acc_1' })).calls.map((c) => c.id)).toContain(placed.call.id);
      const { call, token } = await web.claim('acc_1', placed.call.id, 'alice');
      expect(call).toMatchObject({ status: 'in_progress', claimedBy: 'alice' });
      expect(token.role).toBe('operator');
      expect(await web.join(token.token, placed.call.id, '10.0.0.8:50053')).toMatchObject({ role: 'operator' });
    });

    it('answers a web call to an agentic agent as before: not claimable, in progress when its browser joins', async () => {
      const placed = await web.place('acc_1', { agentId: 'agt_talk' });
      expect(await web.join(placed.token.token, placed.call.id, '')).toMatchObject({ call: { status: 'in_progress', claimable: false } });
    });

    it('answers an inbound call to an agentic agent as before: not claimable, in progress on attach', async () => {
      const { streamToken, carrierCallId } = await inbound('agt_talk');
      const attached = await grpc.attachMedia({ stream_token: streamToken, carrier: 'twilio', carrier_call_id: carrierCallId, command_address: '' });
      expect(attached).toMatchObject({ role: 'carrier', await_claim: false, call: { status: 'in_progress', claimable: false } });
    });

    it('lists the account’s ringing claimable calls whose caller is on the line, oldest first: a rendezvous once its first seat joined', async () => {
      const first = await ringingCall();
      const notOnTheLine = (await inbound('agt_simple')).call;
      const model = await ringingCall('agt_talk');
      const otherAccount = await ringingCall('agt_simple2');
      const meeting = await web.rendezvous('acc_1', { agentId: 'agt_meet' });
      const seated = await web.rendezvous('acc_1', { agentId: 'agt_meet' });
      await web.join((await web.seat('acc_1', seated.id, 'a')).token.token, seated.id, '10.0.0.8:50053');
      const second = await ringingCall();

      const listed = (await grpc.listRinging({ account_id: 'acc_1' })).calls.map((c) => c.id);
      expect(listed).toEqual(expect.arrayContaining([first.id, seated.id, second.id]));
      for (const id of [notOnTheLine.id, model.id, otherAccount.id, meeting.id]) expect(listed).not.toContain(id);
      expect(listed.indexOf(first.id)).toBeLessThan(listed.indexOf(seated.id));
      expect(listed.indexOf(seated.id)).toBeLessThan(listed.indexOf(second.id));
      expect((await grpc.listRinging({ account_id: 'acc_2' })).calls.map((c) => c.id)).toEqual([otherAccount.id]);
    });

    it('announces a rendezvous when its first seat joins', async () => {
      const meeting = await web.rendezvous('acc_1', { agentId: 'agt_meet' });
      expect(meeting.claimable).toBe(true);
      const { token } = await web.seat('acc_1', meeting.id, 'a');
      const joined = await heard('acc_1', () => web.join(token.token, meeting.id, ''));
      expect(joined).toEqual([{ kind: 'ringing', call: expect.objectContaining({ id: meeting.id, status: 'ringing' }) }]);
    });
  });

  describe('claim', () => {
    it('lets exactly one of five concurrent claims win; the others get 409 conflict', async () => {
      const call = await ringingCall();
      const outcomes = await Promise.allSettled(['ann', 'bob', 'cy', 'di', 'ed'].map((operator) => web.claim('acc_1', call.id, operator)));
      const won = outcomes.filter((o): o is PromiseFulfilledResult<Awaited<ReturnType<WebCalls['claim']>>> => o.status === 'fulfilled');
      const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(lost.map((o) => (o.reason as AppError).code)).toEqual(['conflict', 'conflict', 'conflict', 'conflict']);
      expect(lost[0].reason.message).toContain(`claimed already (by ${won[0].value.call.claimedBy})`);
      expect((await outboxTypes(call.id)).filter((t) => t === 'call.started')).toHaveLength(1);
    });

    it('answers a claimed phone call (call.started, claimed_by and claimed_at), hands an operator token, and takes it off the ringing list', async () => {
      const call = await ringingCall();
      let claimed: Awaited<ReturnType<CallsGrpcController['claimCall']>> | undefined;
      const activity = await heard('acc_1', async () => (claimed = await grpc.claimCall({ account_id: 'acc_1', id: call.id, operator: 'alice' })));
      expect(claimed?.call).toMatchObject({ status: 'in_progress', claimable: true, claimed_by: 'alice', claimed_at: expect.stringMatching(/^\d{4}-/) });
      expect(claimed?.call?.answered_at).toBe(claimed?.call?.claimed_at);
      expect(claimed?.token).toMatchObject({ role: 'operator', seat: '', token: expect.stringMatching(/^rtk_/) });
      expect(claimsOf(claimed?.token?.token ?? '')).toMatchObject({ role: 'operator', operator: 'alice', call_id: call.id, account_id: 'acc_1' });
      expect(activity).toEqual([{ kind: 'gone', reason: 'claimed', call: expect.objectContaining({ id: call.id, claimed_by: 'alice' }) }]);
      expect(await outboxTypes(call.id)).toContain('call.started');
      expect((await grpc.listRinging({ account_id: 'acc_1' })).calls.map((c) => c.id)).not.toContain(call.id);
    });

    it('records "api" as the claimer when the claim names nobody', async () => {
      const call = await ringingCall();
      expect((await web.claim('acc_1', call.id, '')).call.claimedBy).toBe('api');
    });

    it('hands the free seat of a claimed rendezvous, which stays ringing until that browser joins', async () => {
      const meeting = await web.rendezvous('acc_1', { agentId: 'agt_meet', seats: ['customer', 'agent'] });
      await web.join((await web.seat('acc_1', meeting.id, 'customer')).token.token, meeting.id, '10.0.0.8:50053');
      const { call, token } = await web.claim('acc_1', meeting.id, 'alice');
      expect(call).toMatchObject({ status: 'ringing', claimedBy: 'alice' });
      expect(token).toMatchObject({ role: 'seat', seat: 'agent' });
      expect((await grpc.listRinging({ account_id: 'acc_1' })).calls.map((c) => c.id)).not.toContain(meeting.id);
      // The free seat is the claimer's now: no other token for it.
      await expect(web.seat('acc_1', meeting.id, 'agent')).rejects.toMatchObject({ code: 'conflict', message: 'Seat agent was claimed by alice.' });
      expect(await web.join(token.token, meeting.id, '10.0.0.8:50053')).toMatchObject({ role: 'seat', call: { status: 'in_progress' } });
    });

    it('refuses a call that is not ringing yet (409), over (409), not claimable (409), claimed (409), and another account’s (404)', async () => {
      const waiting = (await inbound('agt_simple')).call;
      await expect(web.claim('acc_1', waiting.id, 'alice')).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('not ringing') });
      const queued = await web.rendezvous('acc_1', { agentId: 'agt_meet' });
      await expect(web.claim('acc_1', queued.id, 'alice')).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('not ringing') });

      const over = await ringingCall();
      await control.end('acc_1', over.id, 'hangup');
      await expect(web.claim('acc_1', over.id, 'alice')).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('over (canceled)') });

      const model = await ringingCall('agt_talk');
      await expect(web.claim('acc_1', model.id, 'alice')).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('not claimable') });

      const taken = await ringingCall();
      await web.claim('acc_1', taken.id, 'alice');
      await expect(web.claim('acc_1', taken.id, 'bob')).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('claimed already (by alice)') });

      const ours = await ringingCall();
      await expect(web.claim('acc_2', ours.id, 'mallory')).rejects.toMatchObject({ code: 'not_found' });
      await expect(web.claim('acc_1', ours.id, 'x'.repeat(81))).rejects.toMatchObject({ code: 'validation_error', errors: [{ field: 'operator' }] });
      expect((await calls.get('acc_1', ours.id)).claimedBy).toBeNull();
    });
  });

  describe('the operator’s token', () => {
    it('joins the claimed call once, leaving its status and the command address (the phone stream’s worker) as they were', async () => {
      const call = await ringingCall('agt_simple', '10.0.0.7:50053');
      const { token } = await web.claim('acc_1', call.id, 'alice');
      const joined = await grpc.attachMedia({ stream_token: token.token, carrier: 'web', carrier_call_id: call.id, command_address: '10.0.0.99:50053' });
      expect(joined).toMatchObject({ role: 'operator', await_claim: false, seat: '', call: { id: call.id, status: 'in_progress' } });
      expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'in_progress', mediaWorker: '10.0.0.7:50053' });
      expect(await refusalOf(web.join(token.token, call.id, ''))).toBe('token_used');

      await control.end('acc_1', call.id, 'hangup');
      await settle();
      expect(workers.about(call.id)).toMatchObject([{ address: '10.0.0.7:50053', command: 'end_stream' }]);
    });

    it('is refused once its window passed, for another call, and once the call is over', async () => {
      const call = await ringingCall();
      const other = await ringingCall();
      const { token } = await web.claim('acc_1', call.id, 'alice');
      expect(await refusalOf(web.join(token.token, other.id, ''))).toBe('token_forbidden');
      const now = Date.now();
      jest.spyOn(Date, 'now').mockReturnValue(now + 61_000);
      expect(await refusalOf(web.join(token.token, call.id, ''))).toBe('token_expired');
      jest.restoreAllMocks();
      await control.end('acc_1', call.id, 'hangup');
      expect(await refusalOf(web.join(token.token, call.id, ''))).toBe('call_over');
    });
  });

  describe('ends of a ringing call', () => {
    it('says a ringing call is gone (ended) when the caller hangs up first (canceled) or it is given up (no_answer)', async () => {
      const hungUp = await ringingCall();
      const activity = await heard('acc_1', () => grpc.endCall({ account_id: 'acc_1', id: hungUp.id, reason: 'hangup' }));
      expect(await calls.get('acc_1', hungUp.id)).toMatchObject({ status: 'ended', endReason: 'canceled' });
      expect(activity).toEqual([{ kind: 'gone', reason: 'ended', call: expect.objectContaining({ id: hungUp.id, status: 'ended' }) }]);

      const unanswered = await ringingCall();
      const givenUp = await heard('acc_1', () => grpc.endCall({ account_id: 'acc_1', id: unanswered.id, reason: 'given_up' }));
      expect(await calls.get('acc_1', unanswered.id)).toMatchObject({ status: 'ended', endReason: 'no_answer' });
      expect(givenUp).toEqual([{ kind: 'gone', reason: 'ended', call: expect.objectContaining({ id: unanswered.id, end_reason: 'no_answer' }) }]);
      expect((await outboxTypes(unanswered.id)).filter((t) => t === 'call.ended')).toHaveLength(1);
    });

    it('ends a claimed call whose operator never came no_answer when its worker says so, with no second gone', async () => {
      const call = await ringingCall();
      await web.claim('acc_1', call.id, 'alice');
      const activity = await heard('acc_1', () => grpc.endCall({ account_id: 'acc_1', id: call.id, reason: 'no_answer' }));
      expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'ended', endReason: 'no_answer' });
      expect(activity).toEqual([]);
    });
  });

  describe('console tokens', () => {
    it('mints a console token for an operator: role console, no call, the default window, a session of 12 hours', async () => {
      const minted = await grpc.mintConsoleToken({ account_id: 'acc_1', operator: 'alice', ttl_seconds: 0, refresh: '' });
      expect(minted.token).toMatchObject({ role: 'console', token: expect.stringMatching(/^rtk_/) });
      const window = Date.parse(minted.token?.expires_at ?? '') - Date.now();
      expect(window).toBeGreaterThan((CONSOLE_TOKEN_TTL_SECONDS - 5) * 1000);
      expect(window).toBeLessThanOrEqual(CONSOLE_TOKEN_TTL_SECONDS * 1000);
      expect(Date.parse(minted.session_expires_at) - Date.now()).toBeGreaterThan((CONSOLE_SESSION_MAX_SECONDS - 5) * 1000);
      expect(claimsOf(minted.token?.token ?? '')).toMatchObject({ role: 'console', call_id: '', operator: 'alice', account_id: 'acc_1' });
      // Not single-use: it verifies as often as it is presented.
      for (let i = 0; i < 2; i++) {
        expect(await grpc.verifyConsoleToken({ token: minted.token?.token ?? '' })).toEqual({ account_id: 'acc_1', operator: 'alice', session_expires_at: minted.session_expires_at });
      }
    });

    it('refuses a window outside 60 s to an hour (naming ttl_seconds) and a missing or overlong operator (naming operator)', () => {
      for (const ttl of [59, 3601, -1]) {
        expect(() => web.mintConsole('acc_1', { operator: 'alice', ttlSeconds: ttl, refresh: '' })).toThrow(expect.objectContaining({ code: 'validation_error', errors: [expect.objectContaining({ field: 'ttl_seconds' })] }));
      }
      for (const operator of ['', 'x'.repeat(81)]) {
        expect(() => web.mintConsole('acc_1', { operator, ttlSeconds: 0, refresh: '' })).toThrow(expect.objectContaining({ errors: [expect.objectContaining({ field: 'operator' })] }));
      }
      expect(web.mintConsole('acc_1', { operator: 'alice', ttlSeconds: 60, refresh: '' }).token.role).toBe('console');
    });

    it('refreshes a valid console token into a new one with its operator and session end; never past the session end', () => {
      const first = web.mintConsole('acc_1', { operator: 'alice', ttlSeconds: 900, refresh: '' });
      const now = Date.now();
      jest.spyOn(Date, 'now').mockReturnValue(now + 600_000);
      const next = web.mintConsole('acc_1', { operator: 'ignored', ttlSeconds: 900, refresh: first.token.token });
      expect(next).toMatchObject({ operator: 'alice', sessionExpiresAt: first.sessionExpiresAt });
      expect(next.token.token).not.toBe(first.token.token);
      expect(next.token.expiresAt.getTime()).toBeGreaterThan(first.token.expiresAt.getTime());

      // Refreshed every 50 minutes, the console keeps going until the session's end, where the last window stops.
      let last = next;
      for (let at = now + 600_000 + 840_000; at < first.sessionExpiresAt.getTime(); at += 3_000_000) {
        jest.spyOn(Date, 'now').mockReturnValue(at);
        last = web.mintConsole('acc_1', { operator: '', ttlSeconds: 3600, refresh: last.token.token });
        expect(last.token.expiresAt.getTime()).toBeLessThanOrEqual(first.sessionExpiresAt.getTime());
      }
      expect(last.token.expiresAt.getTime()).toBe(first.sessionExpiresAt.getTime());
      jest.spyOn(Date, 'now').mockReturnValue(first.sessionExpiresAt.getTime() + 1000);
      expect(() => web.mintConsole('acc_1', { operator: '', ttlSeconds: 0, refresh: last.token.token })).toThrow(expect.objectContaining({ code: 'unauthenticated' }));
    });

    it('refuses to refresh or verify an expired token, a forged one, a call’s token or another account’s', async () => {
      const minted = web.mintConsole('acc_1', { operator: 'alice', ttlSeconds: 60, refresh: '' });
      const { token: callToken } = await web.claim('acc_1', (await ringingCall()).id, 'alice');
      const [body, mac] = minted.token.token.split('.');
      for (const bad of [`${body}.${mac.slice(0, -2)}AA`, callToken.token, 'vsk_live_0123456789abcdef', '']) {
        expect(() => web.verifyConsole(bad)).toThrow(expect.objectContaining({ code: 'unauthenticated' }));
        expect(() => web.mintConsole('acc_1', { operator: 'alice', ttlSeconds: 0, refresh: bad || 'rtk_x' })).toThrow(expect.objectContaining({ code: 'unauthenticated' }));
      }
      expect(() => web.mintConsole('acc_2', { operator: 'alice', ttlSeconds: 0, refresh: minted.token.token })).toThrow(expect.objectContaining({ code: 'unauthenticated' }));
      const now = Date.now();
      jest.spyOn(Date, 'now').mockReturnValue(now + 61_000);
      expect(() => web.verifyConsole(minted.token.token)).toThrow(expect.objectContaining({ code: 'unauthenticated' }));
      expect(() => web.mintConsole('acc_1', { operator: '', ttlSeconds: 0, refresh: minted.token.token })).toThrow(expect.objectContaining({ code: 'unauthenticated' }));
    });

    it('refuses a console token past its session’s end even inside its own window (one no mint would make)', () => {
      const forged = new SignedTokens<Record<string, unknown>>(resolveSecretKey(config), 'realtime').sign(
        { jti: 'j1', account_id: 'acc_1', call_id: '', role: 'console', operator: 'alice', session_exp: Math.floor(Date.now() / 1000) - 1 },
        600,
      );
      expect(() => web.verifyConsole(`rtk_${forged.token}`)).toThrow(expect.objectContaining({ code: 'unauthenticated' }));
    });

    it('opens no call on the realtime socket', async () => {
      const minted = web.mintConsole('acc_1', { operator: 'alice', ttlSeconds: 0, refresh: '' });
      expect(await refusalOf(web.join(minted.token.token, '', ''))).toBe('token_invalid');
    });
  });
});
