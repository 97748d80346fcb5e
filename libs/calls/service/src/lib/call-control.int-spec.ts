import { ClientGrpc } from '@nestjs/microservices';
import { delay, of } from 'rxjs';
import { DataSource } from 'typeorm';
import { FakeTwilioServer, signedTwilioWebhook, TwilioCallStatus } from '@parley/carrier-twilio';
import { ServiceConfig } from '@parley/config';
import { publicEnvelope, WebhookEvent } from '@parley/contracts';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
// eslint-disable-next-line @nx/enforce-module-boundaries -- test-only helper for a fresh database
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

/** The agents service as the calls service sees it: agent agt_1 of accounts acc_1 and acc_3; agt_slow answers in 300 ms. */
const AGENT = { effective_json: '{"record_calls":true}', spec_json: '{"ring_seconds":45}' };
/** agt_vm leaves a message on answering machines. */
const VOICEMAIL_AGENT = { effective_json: '{}', spec_json: '{"conversation":{"voicemail":"message","voicemail_message":"Please call us back."}}' };
/** agt_desk's calls are answered by a person (simple); agt_meet introduces two browsers (webrtc). */
const PERSON_AGENTS: Record<string, { effective_json: string; spec_json: string }> = {
  agt_desk: { effective_json: '{"autonomy":"simple"}', spec_json: '{"autonomy":"simple"}' },
  agt_meet: { effective_json: '{}', spec_json: '{"mode":"webrtc"}' },
};
/** agt_judged's calls succeed when they end in a transfer (post_call.success). */
const JUDGED_AGENT = { effective_json: '{}', spec_json: '{"post_call":{"success":{"end_reasons":["transferred"]}}}' };
const agents = {
  getService: () => ({
    getAgent: (req: { account_id: string; id: string }) =>
      req.id === 'agt_judged'
        ? of({ agent: JUDGED_AGENT })
        : req.id === 'agt_slow'
        ? of({ agent: AGENT }).pipe(delay(300))
        : req.id === 'agt_vm'
          ? of({ agent: VOICEMAIL_AGENT })
        : PERSON_AGENTS[req.id]
          ? of({ agent: PERSON_AGENTS[req.id] })
        : of({ agent: ['acc_1', 'acc_3'].includes(req.account_id) && req.id === 'agt_1' ? AGENT : undefined }),
    locateAgent: () => of({ account_id: 'acc_1' }),
  }),
} as unknown as ClientGrpc;

/** Waits for a command sent after a commit (never awaited by the change that caused it). */
async function until(check: () => boolean, ms = 2_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('call control with Twilio (real PostgreSQL, fake Twilio)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let relay: OutboxRelay;
  let control: CallControl;
  let calls: CallsDomain;
  const workers = new FakeMediaWorkers();
  let admission: CallAdmission;
  let carriers: CarrierRegistry;
  const twilio = new FakeTwilioServer();
  const config = new ServiceConfig();

  beforeAll(async () => {
    Object.assign(config, {
      SECRET_KEY: 'x'.repeat(40),
      ...(await twilio.platformEnv()),
      PUBLIC_URL: 'https://parley.example',
      MEDIA_PUBLIC_URL: 'wss://media.parley.example',
    });
    db = await createTestDatabase('parley_callctl');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    const bus = new InProcessBus();
    bus.open();
    relay = new OutboxRelay(dataSource, bus);
    const repository = new CallsRepository(dataSource);
    calls = new CallsDomain(repository, relay, bus, config, workers.commands);
    admission = new CallAdmission(bus, repository, config);
    carriers = CarrierRegistry.fromConfig(config);
    control = new CallControl(calls, carriers, agents, config, admission);
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
    await twilio.stop();
  });

  const outboxTypes = async (callId: string) =>
    ((await dataSource.getRepository(OutboxRecord).find({ order: { createdAt: 'ASC' } })) as OutboxRecord[])
      .filter((r) => r.subject.startsWith('parley.events.'))
      .map((r) => r.payload as { type: string; call_id: string; data: unknown })
      .filter((e) => e.call_id === callId);

  it('dials with the agent’s ring time, the status callback and a stream token that attaches only its own call', async () => {
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100000' });
    const dial = twilio.lastCall!;
    expect(dial.form).toMatchObject({ To: '+15550100000', From: '+15550009999', Timeout: '45', StatusCallback: `https://parley.example/carriers/twilio/status?call=${call.id}` });
    expect(call).toMatchObject({ status: 'queued', carrier: 'twilio', carrierCallId: dial.callSid, recordingEnabled: true });
    const token = /name="token" value="([^"]+)"/.exec(dial.twiml ?? '')?.[1] ?? '';
    expect(dial.twiml).toContain('url="wss://media.parley.example/streams/twilio"');

    await expect(control.attachMedia(token, 'twilio', 'CAsomeoneelse')).rejects.toMatchObject({ code: 'unauthenticated' });
    await expect(control.attachMedia(`${token}x`, 'twilio', dial.callSid!)).rejects.toMatchObject({ code: 'unauthenticated' });
    expect(await control.attachMedia(token, 'twilio', dial.callSid!)).toMatchObject({ call: { status: 'in_progress' }, resume: '' });
  });

  it('hands the events injected before the media stream opened to the stream that attaches, once', async () => {
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100077' });
    const dial = twilio.lastCall!;
    const token = /name="token" value="([^"]+)"/.exec(dial.twiml ?? '')?.[1] ?? '';
    // The payment system reports as the call is answered, before the stream opens.
    const paid = await calls.inject('acc_1', call.id, 'payment_received', { amount: 42 });
    expect(paid.delivered).toBe(false);

    const attached = await control.attachMedia(token, 'twilio', dial.callSid!, '10.0.8.1:50053');
    expect(attached).toMatchObject({ call: { status: 'in_progress' }, pending: [paid.injected] });
    // The stream's worker takes the next one itself: nothing kept.
    expect((await calls.inject('acc_1', call.id, 'shipped', {})).delivered).toBe(true);
    // A later stream of the call (a resume) gets none of them again.
    expect((await control.attachMedia(token, 'twilio', dial.callSid!, '10.0.8.1:50053')).pending).toEqual([]);
    await calls.transition('acc_1', call.id, () => ({ status: 'ended', endReason: 'completed' }));
  });

  /** A call placed and answered on a stream attached by the worker that takes commands at `worker`. */
  async function attachedCall(to: string, worker: string, agentId = 'agt_1') {
    const call = await control.placeOutbound('acc_1', { agentId, to });
    const dial = twilio.lastCall;
    const token = /name="token" value="([^"]+)"/.exec(dial?.twiml ?? '')?.[1] ?? '';
    await control.attachMedia(token, 'twilio', dial?.callSid ?? '', worker);
    return calls.get('acc_1', call.id);
  }

  const signedWebhook = (kind: 'status' | 'amd', params: Record<string, string>) => {
    const url = `https://parley.example/carriers/twilio/${kind}`;
    return control.handleWebhook({ carrier: 'twilio', kind, url, headers: signedTwilioWebhook(url, params, twilio.authToken).headers, params, agent_id: '' });
  };

  it('commands the worker holding the stream to close it, however the call ends: the API, the carrier, the stream’s stop', async () => {
    const byApi = await attachedCall('+15550100030', '10.0.0.1:50053');
    expect(byApi).toMatchObject({ status: 'in_progress', mediaWorker: '10.0.0.1:50053' });
    await control.end('acc_1', byApi.id, 'hangup');
    await until(() => workers.about(byApi.id).length > 0);
    expect(workers.about(byApi.id)).toEqual([{ address: '10.0.0.1:50053', command: 'end_stream', req: { call_id: byApi.id, reason: 'hangup' } }]);

    const byCarrier = await attachedCall('+15550100031', '10.0.0.2:50053');
    expect(await signedWebhook('status', twilio.statusCallbackParams(byCarrier.carrierCallId ?? '', 'completed'))).toMatchObject({ status_code: 204 });
    await until(() => workers.about(byCarrier.id).length > 0);
    expect(workers.about(byCarrier.id)).toEqual([{ address: '10.0.0.2:50053', command: 'end_stream', req: { call_id: byCarrier.id, reason: 'completed' } }]);

    // The stream stopped: its worker no longer holds it and says so; the call is ended all the same.
    const byStop = await attachedCall('+15550100032', '10.0.0.3:50053');
    workers.notHeld.add(byStop.id);
    expect(await control.mediaHeartbeat('acc_1', byStop.id, true)).toBe(false);
    expect(await calls.get('acc_1', byStop.id)).toMatchObject({ status: 'ended', endReason: 'completed' });
    expect(workers.about(byStop.id)).toEqual([]);
  });

  it('ends a call the caller left completed once answered (a claim may answer before the worker knows) and canceled before', async () => {
    const answered = await attachedCall('+15550100035', '10.0.0.5:50053');
    expect(await control.end('acc_1', answered.id, 'caller_left')).toMatchObject({ status: 'ended', endReason: 'completed' });
    const ringing = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100036' });
    expect(await control.end('acc_1', ringing.id, 'caller_left')).toMatchObject({ status: 'ended', endReason: 'canceled' });
  });

  it('ends a call whose worker cannot be reached all the same: its stream is left to the heartbeat answer', async () => {
    const call = await attachedCall('+15550100033', '10.0.0.9:50053');
    workers.gone.add('10.0.0.9:50053');

    expect(await control.end('acc_1', call.id, 'hangup')).toMatchObject({ status: 'ended', endReason: 'hangup' });
    expect(await control.mediaHeartbeat('acc_1', call.id, false)).toBe(false);
    expect(workers.about(call.id)).toEqual([]);
  });

  it('commands the worker holding the stream to leave the voicemail message when a machine answers', async () => {
    const call = await attachedCall('+15550100034', '10.0.0.4:50053', 'agt_vm');
    const params = { AccountSid: twilio.accountSid, CallSid: call.carrierCallId ?? '', AnsweredBy: 'machine_end_beep', MachineDetectionDuration: '2500' };

    expect(await signedWebhook('amd', params)).toMatchObject({ status_code: 204 });

    expect(workers.about(call.id)).toEqual([{ address: '10.0.0.4:50053', command: 'leave_voicemail', req: { call_id: call.id, message: 'Please call us back.' } }]);
    expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'in_progress', answeredBy: 'machine' });
    await control.end('acc_1', call.id, 'voicemail');
  });

  it('finds a call whose carrier id was never recorded through the call id on its signed callback URL, and records it', async () => {
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100003' });
    const sid = twilio.lastCall!.callSid!;
    // Recording the dial's outcome failed (the database was away when the carrier answered the dial).
    await dataSource.query(`UPDATE calls SET carrier_call_id = NULL WHERE id = $1`, [call.id]);
    const callback = async (url: string, callSid: string, status: TwilioCallStatus) => {
      const params = twilio.statusCallbackParams(callSid, status);
      const signed = signedTwilioWebhook(url, params, twilio.authToken);
      return control.handleWebhook({ carrier: 'twilio', kind: 'status', url, headers: signed.headers, params, agent_id: '' });
    };
    const url = String(twilio.lastCall!.form['StatusCallback']);

    await callback(url, sid, 'ringing');
    expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'ringing', carrierCallId: sid });
    // Another carrier call naming this call (a forged or stale hint) changes nothing: the call has its id now.
    await callback(url, 'CA0000000000000000000000000000ff01', 'completed');
    expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'ringing', carrierCallId: sid });
  });

  it('records the carrier id of a call that has none from the media stream it attaches', async () => {
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100004' });
    const dial = twilio.lastCall!;
    await dataSource.query(`UPDATE calls SET carrier_call_id = NULL WHERE id = $1`, [call.id]);
    const token = /name="token" value="([^"]+)"/.exec(dial.twiml ?? '')?.[1] ?? '';

    expect((await control.attachMedia(token, 'twilio', dial.callSid!)).call).toMatchObject({ status: 'in_progress', carrierCallId: dial.callSid });
  });

  it('transfers an answered call through the REST API, emits call.transferred, and ends it transferred', async () => {
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100001' });
    await expect(control.transfer('acc_1', call.id, '+15550100002')).rejects.toMatchObject({ code: 'conflict' });
    await calls.transition('acc_1', call.id, () => ({ status: 'in_progress' }));
    await expect(control.transfer('acc_1', call.id, 'the front desk')).rejects.toMatchObject({ code: 'validation_error' });

    const transferred = await control.transfer('acc_1', call.id, 'sip:desk@pbx.example.com');
    expect(transferred.transferredTo).toBe('sip:desk@pbx.example.com');
    expect(twilio.lastCall).toMatchObject({ action: 'update', callSid: call.carrierCallId });
    expect(twilio.lastCall?.twiml).toContain('<Sip>sip:desk@pbx.example.com</Sip>');
    // The media stream stopping is the transfer, not the end of the call.
    expect(await control.mediaHeartbeat('acc_1', call.id, true)).toBe(true);

    const params = twilio.statusCallbackParams(call.carrierCallId!, 'completed');
    const url = 'https://parley.example/carriers/twilio/status';
    const signed = signedTwilioWebhook(url, params, twilio.authToken);
    expect(await control.handleWebhook({ carrier: 'twilio', kind: 'status', url, headers: signed.headers, params, agent_id: '' })).toMatchObject({ status_code: 204 });
    expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'ended', endReason: 'transferred' });
    const types = (await outboxTypes(call.id)).map((e) => e.type);
    expect(types).toEqual(['call.started', 'call.transferred', 'call.ended']);
  });

  it('answers a retried inbound webhook for the same carrier call with the same call', async () => {
    const url = 'https://parley.example/carriers/twilio/voice/agt_1';
    const params = { CallSid: 'CA0000000000000000000000000000in01', From: '+15550177777', To: '+15550009999', CallStatus: 'ringing', Direction: 'inbound' };
    const signed = signedTwilioWebhook(url, params, twilio.authToken);
    const first = await control.handleWebhook({ carrier: 'twilio', kind: 'voice', url, headers: signed.headers, params, agent_id: 'agt_1' });
    const retry = await control.handleWebhook({ carrier: 'twilio', kind: 'voice', url, headers: signed.headers, params, agent_id: 'agt_1' });
    expect(first).toMatchObject({ status_code: 200, content_type: 'text/xml' });
    expect(retry.body).toContain('<Stream url="wss://media.parley.example/streams/twilio">');
    const inbound = await dataSource.getRepository(CallEntity).findBy({ carrierCallId: params.CallSid });
    expect(inbound).toHaveLength(1);
    expect(inbound[0]).toMatchObject({ direction: 'inbound', status: 'ringing', from: '+15550177777', accountId: 'acc_1' });
    await expect(
      control.handleWebhook({ carrier: 'twilio', kind: 'voice', url: `${url}?x=1`, headers: signed.headers, params, agent_id: 'agt_1' }),
    ).rejects.toMatchObject({ code: 'unauthenticated' });
    await expect(control.handleWebhook({ carrier: 'telnyx', kind: 'voice', url, headers: signed.headers, params, agent_id: 'agt_1' })).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('refuses outbound calls when the agent’s carrier is not configured or no caller id can be chosen', async () => {
    const bare = new CallControl(calls, new CarrierRegistry([]), agents, config, admission);
    await expect(bare.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100000' })).rejects.toMatchObject({ code: 'service_unavailable' });
    await expect(control.placeOutbound('acc_1', { agentId: 'agt_2', to: '+15550100000' })).rejects.toMatchObject({ code: 'validation_error' });
    const noFrom = new CallControl(
      calls,
      CarrierRegistry.fromConfig(config),
      agents,
      Object.assign(new ServiceConfig(), { ...config, TWILIO_FROM_NUMBER: undefined }),
      admission,
    );
    await expect(noFrom.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100000' })).rejects.toMatchObject({
      code: 'validation_error',
      errors: [{ field: 'from', message: expect.stringContaining('TWILIO_FROM_NUMBER') }],
    });
  });

  it('refuses outbound calls through agents that would have nobody talking: a simple agent (a person answers calls in) and a webrtc agent, dialling nothing', async () => {
    const before = twilio.calls.length;
    await expect(control.placeOutbound('acc_1', { agentId: 'agt_desk', to: '+15550100000' })).rejects.toMatchObject({
      code: 'validation_error',
      errors: [{ field: 'agent_id', message: expect.stringContaining('simple agent') }],
    });
    await expect(control.placeOutbound('acc_1', { agentId: 'agt_meet', to: '+15550100000' })).rejects.toMatchObject({
      code: 'validation_error',
      errors: [{ field: 'agent_id', message: expect.stringContaining('POST /v1/calls/rendezvous') }],
    });
    expect(twilio.calls.length).toBe(before);
  });

  it('puts an opted-out number on the do-not-call list, tells webhooks, and refuses later calls to it', async () => {
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100077' });
    expect(await calls.optOut('acc_1', call.id, '')).toBe('+15550100077');
    const optOut = (await outboxTypes(call.id)).find((e) => e.type === 'call.opt_out');
    expect(optOut?.data).toEqual({ number: '+15550100077' });
    await expect(control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100077' })).rejects.toMatchObject({
      code: 'validation_error',
      errors: [{ field: 'to', message: expect.stringContaining('do-not-call') }],
    });
    // Another account's list is its own.
    expect(await calls.isDoNotCall('acc_2', '+15550100077')).toBe(false);
  });

  it('tells which of a batch of numbers are on the account’s do-not-call list (CheckDoNotCall), and refuses more than 1000', async () => {
    const grpc = new CallsGrpcController(calls, control, {} as WebCalls);
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100201' });
    await calls.optOut('acc_1', call.id, '+15550100201');
    await calls.optOut('acc_1', call.id, '+15550100202');
    const numbers = ['+15550100201', '+15550100203', '+15550100202', '+15550100201', 'not-a-number'];
    expect((await grpc.checkDoNotCall({ account_id: 'acc_1', numbers })).listed.sort()).toEqual(['+15550100201', '+15550100202']);
    // Another account's list is its own; an empty batch asks nothing.
    expect(await grpc.checkDoNotCall({ account_id: 'acc_2', numbers })).toEqual({ listed: [] });
    expect(await grpc.checkDoNotCall({ account_id: 'acc_1', numbers: [] })).toEqual({ listed: [] });
    const tooMany = Array.from({ length: 1001 }, (_, i) => `+1555020${String(i).padStart(4, '0')}`);
    await expect(grpc.checkDoNotCall({ account_id: 'acc_1', numbers: tooMany })).rejects.toMatchObject({ code: 'validation_error' });
    await control.end('acc_1', call.id, 'hangup');
  });

  it('stores and returns the workflow run and recipient of a workflow’s call, routes its events by them, and lists a run’s calls', async () => {
    const grpc = new CallsGrpcController(calls, control, {} as WebCalls);
    const run = 'wfr_0123456789abcdefghijkl';
    const create = async (to: string, over: { workflow_run_id?: string; workflow_recipient_id?: string; idempotency_key?: string } = {}) => {
      const { call } = await grpc.createCall({
        ...{ account_id: 'acc_3', agent_id: 'agt_1', to, from: '', variables: {}, metadata: {}, idempotency_key: '', answer_within_ms: 0 },
        ...{ workflow_run_id: '', workflow_recipient_id: '', ...over },
      });
      if (!call) throw new Error('CreateCall answered without a call');
      return call;
    };
    const first = await create('+15550100211', { workflow_run_id: run, workflow_recipient_id: 'wrc_1', idempotency_key: 'wf-1' });
    const second = await create('+15550100212', { workflow_run_id: run, workflow_recipient_id: 'wrc_2' });
    const other = await create('+15550100213', { workflow_run_id: 'wfr_zzzzzzzzzzzzzzzzzzzzzz', workflow_recipient_id: 'wrc_3' });
    const plain = await create('+15550100214');
    expect(first).toMatchObject({ workflow_run_id: run, workflow_recipient_id: 'wrc_1' });
    expect(plain).toMatchObject({ workflow_run_id: '', workflow_recipient_id: '' });
    expect((await grpc.getCall({ account_id: 'acc_3', id: first.id })).call).toMatchObject({ workflow_run_id: run, workflow_recipient_id: 'wrc_1' });
    expect(await calls.get('acc_3', plain.id)).toMatchObject({ workflowRunId: null, workflowRecipientId: null });
    // A retried create is the same call; the key with another recipient is another request.
    expect((await create('+15550100211', { workflow_run_id: run, workflow_recipient_id: 'wrc_1', idempotency_key: 'wf-1' })).id).toBe(first.id);
    await expect(create('+15550100211', { workflow_run_id: run, workflow_recipient_id: 'wrc_9', idempotency_key: 'wf-1' })).rejects.toMatchObject({ code: 'idempotency_conflict' });

    // Every event of the call carries the run and recipient, for routing: none is delivered with them.
    await grpc.endCall({ account_id: 'acc_3', id: first.id, reason: 'hangup' });
    await grpc.endCall({ account_id: 'acc_3', id: plain.id, reason: 'hangup' });
    const events = (await outboxTypes(first.id)) as unknown as WebhookEvent[];
    expect(events.map((e) => e.type)).toContain('call.ended');
    for (const e of events) expect(e.workflow).toEqual({ run_id: run, recipient_id: 'wrc_1' });
    const ended = events.find((e) => e.type === 'call.ended');
    expect(ended && publicEnvelope(ended)).not.toHaveProperty('workflow');
    const plainEnded = ((await outboxTypes(plain.id)) as unknown as WebhookEvent[]).find((e) => e.type === 'call.ended');
    expect(plainEnded).toBeDefined();
    expect(plainEnded?.workflow ?? null).toBeNull();

    // GET /v1/calls?workflow_run_id=: the run's calls, newest first, and only them.
    const list = (filters: { workflow_run_id?: string; status?: string }) =>
      grpc.listCalls({ account_id: 'acc_3', limit: 10, after: '', agent_id: '', status: '', direction: '', created_after: '', created_before: '', workflow_run_id: '', project_id: '', successful: '', ...filters });
    expect((await list({ workflow_run_id: run })).data.map((c) => c.id)).toEqual([second.id, first.id]);
    expect((await list({ workflow_run_id: run, status: 'ended' })).data.map((c) => c.id)).toEqual([first.id]);
    expect((await list({ workflow_run_id: 'wfr_zzzzzzzzzzzzzzzzzzzzzz' })).data.map((c) => c.id)).toEqual([other.id]);
    expect((await list({})).data.map((c) => c.id)).toEqual(expect.arrayContaining([first.id, second.id, other.id, plain.id]));
    for (const live of [second, other]) await control.end('acc_3', live.id, 'hangup');
  });

  it('judges a call by its agent’s post_call.success as it was when the call was placed, and lists calls by verdict', async () => {
    const grpc = new CallsGrpcController(calls, control, {} as WebCalls);
    const transferred = await control.placeOutbound('acc_1', { agentId: 'agt_judged', to: '+15550100301' });
    const hungUp = await control.placeOutbound('acc_1', { agentId: 'agt_judged', to: '+15550100302' });
    const unjudged = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100303' });
    expect(await calls.get('acc_1', transferred.id)).toMatchObject({ successCriteria: { end_reasons: ['transferred'] }, successful: null });
    expect(await calls.get('acc_1', unjudged.id)).toMatchObject({ successCriteria: null, successful: null });

    await control.end('acc_1', transferred.id, 'transferred');
    await control.end('acc_1', hungUp.id, 'hangup');
    await control.end('acc_1', unjudged.id, 'hangup');
    expect((await grpc.getCall({ account_id: 'acc_1', id: transferred.id })).call?.successful).toBe(true);
    expect((await grpc.getCall({ account_id: 'acc_1', id: hungUp.id })).call?.successful).toBe(false);
    expect((await grpc.getCall({ account_id: 'acc_1', id: unjudged.id })).call?.successful).toBeUndefined();

    // GET /v1/calls?successful=: only the calls with that verdict; undecided ones match neither.
    const list = async (successful: string) =>
      (
        await grpc.listCalls({ account_id: 'acc_1', limit: 100, after: '', agent_id: '', status: '', direction: '', created_after: '', created_before: '', workflow_run_id: '', project_id: '', successful })
      ).data.map((c) => c.id);
    const mine = [transferred.id, hungUp.id, unjudged.id];
    expect((await list('true')).filter((id) => mine.includes(id))).toEqual([transferred.id]);
    expect((await list('false')).filter((id) => mine.includes(id))).toEqual([hungUp.id]);
    expect((await list('')).filter((id) => mine.includes(id))).toEqual([unjudged.id, hungUp.id, transferred.id]);
  });

  it('records each function the agent invoked as call.tool.called', async () => {
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100078' });
    await calls.toolCalled('acc_1', call.id, { name: 'lookup_order', kind: 'custom_function', arguments: { order: '42' }, ok: false, error: 'HTTP 500' });
    const event = (await outboxTypes(call.id)).find((e) => e.type === 'call.tool.called');
    expect(event?.data).toEqual({ name: 'lookup_order', kind: 'custom_function', arguments: { order: '42' }, ok: false, error: 'HTTP 500' });
  });

  it('reports a numbered tool call once however often the worker retries it, and each numbered report once', async () => {
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100081' });
    const lookup = { name: 'lookup_order', kind: 'custom_function', arguments: { order: '7' }, ok: true };
    await calls.toolCalled('acc_1', call.id, lookup, { id: 'MZ1', seq: 3 });
    await calls.toolCalled('acc_1', call.id, lookup, { id: 'MZ1', seq: 3 });
    await calls.toolCalled('acc_1', call.id, lookup, { id: 'MZ1', seq: 4 });
    // The same number on another stream (the call was resumed on a new one) is another report.
    await calls.toolCalled('acc_1', call.id, lookup, { id: 'MZ2', seq: 3 });

    expect((await outboxTypes(call.id)).filter((e) => e.type === 'call.tool.called')).toHaveLength(3);
  });

  it('brings the caller back to the agent when the transfer is not answered, and hangs up after an answered one', async () => {
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100079' });
    await calls.transition('acc_1', call.id, () => ({ status: 'in_progress' }));
    await control.transfer('acc_1', call.id, '+15550100080');
    const dial = twilio.lastCall?.twiml ?? '';
    expect(dial).toContain('<Dial action="https://parley.example/carriers/twilio/transfer-result" method="POST">');

    const url = 'https://parley.example/carriers/twilio/transfer-result';
    const noAnswer = { CallSid: call.carrierCallId!, DialCallStatus: 'no-answer' };
    const signed = signedTwilioWebhook(url, noAnswer, twilio.authToken);
    const back = await control.handleWebhook({ carrier: 'twilio', kind: 'transfer-result', url, headers: signed.headers, params: noAnswer, agent_id: '' });
    expect(back.body).toContain('<Stream url="wss://media.parley.example/streams/twilio">');
    expect((await calls.get('acc_1', call.id)).transferredTo).toBeNull();
    const token = /name="token" value="([^"]+)"/.exec(back.body)?.[1] ?? '';
    expect(await control.attachMedia(token, 'twilio', call.carrierCallId!)).toMatchObject({ call: { status: 'in_progress' }, resume: 'transfer_no_answer' });

    await control.transfer('acc_1', call.id, '+15550100080');
    const answered = { CallSid: call.carrierCallId!, DialCallStatus: 'completed' };
    const signedAnswered = signedTwilioWebhook(url, answered, twilio.authToken);
    const done = await control.handleWebhook({ carrier: 'twilio', kind: 'transfer-result', url, headers: signedAnswered.headers, params: answered, agent_id: '' });
    expect(done.body).toContain('<Hangup/>');
  });

  it('keeps a transferring call when the stream placing the transfer stops first, and when a busy line brought the caller back before that stop', async () => {
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100083' });
    await calls.transition('acc_1', call.id, () => ({ status: 'in_progress' }));
    const twilioCarrier = carriers.pick('twilio')!;
    const atTwilio = twilioCarrier.transferCall.bind(twilioCarrier);
    const liveAtStop: boolean[] = [];
    const transferring = jest.spyOn(twilioCarrier, 'transferCall').mockImplementationOnce(async (...args) => {
      // Twilio stops the stream as it moves the call; the worker's last heartbeat can come before Twilio's answer.
      liveAtStop.push(await control.mediaHeartbeat('acc_1', call.id, true, 'MZfirst'));
      return atTwilio(...args);
    });
    await control.transfer('acc_1', call.id, '+15550100084', 'MZfirst');
    transferring.mockRestore();
    expect(liveAtStop).toEqual([true]);
    expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'in_progress', transferredTo: '+15550100084' });

    const url = 'https://parley.example/carriers/twilio/transfer-result';
    const busy = { CallSid: call.carrierCallId!, DialCallStatus: 'busy' };
    const back = await control.handleWebhook({ carrier: 'twilio', kind: 'transfer-result', url, headers: signedTwilioWebhook(url, busy, twilio.authToken).headers, params: busy, agent_id: '' });
    const token = /name="token" value="([^"]+)"/.exec(back.body)?.[1] ?? '';
    expect(await control.attachMedia(token, 'twilio', call.carrierCallId!)).toMatchObject({ resume: 'transfer_busy' });
    // The first stream's stop, late: the caller is talking to the agent on the new stream.
    expect(await control.mediaHeartbeat('acc_1', call.id, true, 'MZfirst')).toBe(true);
    expect((await calls.get('acc_1', call.id)).status).toBe('in_progress');
    // The new stream's stop ends the call.
    expect(await control.mediaHeartbeat('acc_1', call.id, true, 'MZsecond')).toBe(false);
    expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'ended', endReason: 'completed' });
  });

  it('unmarks a transfer the carrier refuses, so the stream’s stop then ends the call', async () => {
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100085' });
    await calls.transition('acc_1', call.id, () => ({ status: 'in_progress' }));
    twilio.failNext({ status: 500, code: 20500, message: 'Internal Server Error' });
    await expect(control.transfer('acc_1', call.id, '+15550100086', 'MZonly')).rejects.toMatchObject({ code: 'service_unavailable' });
    expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'in_progress', transferredTo: null, transferStreamId: null });
    expect((await outboxTypes(call.id)).map((e) => e.type)).not.toContain('call.transferred');

    expect(await control.mediaHeartbeat('acc_1', call.id, true, 'MZonly')).toBe(false);
    expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'ended', endReason: 'completed' });
  });

  it('never reaps a transferred call for lack of media', async () => {
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100081' });
    await calls.transition('acc_1', call.id, () => ({ status: 'in_progress' }));
    await control.transfer('acc_1', call.id, '+15550100082');
    await dataSource.query(`UPDATE calls SET updated_at = now() - interval '1 day' WHERE id = $1`, [call.id]);
    await calls.failStuckCalls();
    expect((await calls.get('acc_1', call.id)).status).toBe('in_progress');
  });

  const dialsTo = (to: string) => twilio.calls.filter((c) => c.action === 'create' && c.form['To'] === to);

  it('dials nothing and records nothing for a create whose deadline passes before it could dial', async () => {
    const started = Date.now();
    await expect(control.placeOutbound('acc_3', { agentId: 'agt_slow', to: '+15550100090', idempotencyKey: 'late-1', answerWithinMs: 200 })).rejects.toMatchObject({
      code: 'service_unavailable',
      extra: { retry_after_seconds: 1 },
      message: expect.stringContaining('Nothing was dialled'),
    });
    // Refused when the agent read came back after the deadline, not later.
    expect(Date.now() - started).toBeLessThan(3000);
    expect(dialsTo('+15550100090')).toHaveLength(0);
    expect(await dataSource.getRepository(CallEntity).countBy({ to: '+15550100090' })).toBe(0);
    // The key was not used up: with time enough, the same request places the call.
    const placed = await control.placeOutbound('acc_3', { agentId: 'agt_slow', to: '+15550100090', idempotencyKey: 'late-1', answerWithinMs: 5000 });
    expect(placed).toMatchObject({ status: 'queued', idempotencyKey: 'late-1' });
    expect(dialsTo('+15550100090')).toHaveLength(1);
  });

  it('returns the same call, dialled once, to a retried create with the same Idempotency-Key, and refuses the key with another request', async () => {
    const request = { agentId: 'agt_1', to: '+15550100091', variables: { name: 'Ada' }, idempotencyKey: 'retry-1', answerWithinMs: 5000 };
    const first = await control.placeOutbound('acc_3', request);
    const retry = await control.placeOutbound('acc_3', { ...request, variables: { name: 'Ada' } });
    expect(retry.id).toBe(first.id);
    expect(retry.carrierCallId).toBe(first.carrierCallId);
    expect(dialsTo('+15550100091')).toHaveLength(1);
    await expect(control.placeOutbound('acc_3', { ...request, to: '+15550100092' })).rejects.toMatchObject({ code: 'idempotency_conflict' });
    // Keys belong to their account.
    const other = await control.placeOutbound('acc_1', request);
    expect(other.id).not.toBe(first.id);
    expect(dialsTo('+15550100091')).toHaveLength(2);
    expect(dialsTo('+15550100092')).toHaveLength(0);
  });

  it('answers within the deadline while a slow carrier is still dialling, and the retry finds the call the dial completes', async () => {
    const twilioAdapter = CarrierRegistry.fromConfig(config).pick('twilio')!;
    const slow = Object.assign(Object.create(twilioAdapter), {
      placeCall: async (...args: Parameters<typeof twilioAdapter.placeCall>) => {
        await new Promise((r) => setTimeout(r, 1500));
        return twilioAdapter.placeCall(...args);
      },
    });
    const slowControl = new CallControl(calls, new CarrierRegistry([slow]), agents, config, admission);
    const request = { agentId: 'agt_1', to: '+15550100093', idempotencyKey: 'slow-1', answerWithinMs: 400 };
    const answered = await slowControl.placeOutbound('acc_3', request);
    // Answered before the dial came back: the call as recorded, queued, no carrier id yet.
    expect(answered).toMatchObject({ status: 'queued', carrierCallId: null });
    expect(dialsTo('+15550100093')).toHaveLength(0);
    const retry = await slowControl.placeOutbound('acc_3', request);
    expect(retry.id).toBe(answered.id);
    for (const deadline = Date.now() + 10_000; !(await calls.get('acc_3', answered.id)).carrierCallId && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const dialled = await calls.get('acc_3', answered.id);
    expect(dialled.carrierCallId).toBe(dialsTo('+15550100093')[0]?.callSid);
    expect((await slowControl.placeOutbound('acc_3', request)).carrierCallId).toBe(dialled.carrierCallId);
    expect(dialsTo('+15550100093')).toHaveLength(1);
  });
});
