import { ClientGrpc } from '@nestjs/microservices';
import { of } from 'rxjs';
import { DataSource } from 'typeorm';
import { FakeTwilioServer, signedTwilioWebhook } from '@parley/carrier-twilio';
import { ServiceConfig } from '@parley/config';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
// eslint-disable-next-line @nx/enforce-module-boundaries -- test-only helper for a fresh database
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallControl } from './call-control';
import { CallsDomain } from './calls.domain';
import { CarrierRegistry } from './carrier-registry';
import { CallEntity, CallTurnEntity } from './entities';
import { CALLS_MIGRATIONS } from './migrations';

/** The agents service as the calls service sees it: one agent of account acc_1. */
const agents = {
  getService: () => ({
    getAgent: (req: { account_id: string; id: string }) =>
      of({ agent: req.account_id === 'acc_1' && req.id === 'agt_1' ? { effective_json: '{"record_calls":true}', spec_json: '{"ring_seconds":45}' } : undefined }),
    locateAgent: () => of({ account_id: 'acc_1' }),
  }),
} as unknown as ClientGrpc;

describe('call control with Twilio (real PostgreSQL, fake Twilio)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let relay: OutboxRelay;
  let control: CallControl;
  let calls: CallsDomain;
  const twilio = new FakeTwilioServer();
  const config = new ServiceConfig();

  beforeAll(async () => {
    Object.assign(config, {
      SECRET_KEY: 'x'.repeat(40),
      TWILIO_ACCOUNT_SID: twilio.accountSid,
      TWILIO_AUTH_TOKEN: twilio.authToken,
      TWILIO_API_BASE_URL: await twilio.start(),
      TWILIO_FROM_NUMBER: '+15550009999',
      PUBLIC_URL: 'https://parley.example',
      MEDIA_PUBLIC_URL: 'wss://media.parley.example',
    });
    db = await createTestDatabase('parley_callctl');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    const bus = new InProcessBus();
    bus.open();
    relay = new OutboxRelay(dataSource, bus);
    calls = new CallsDomain(dataSource, relay, bus, config);
    control = new CallControl(calls, CarrierRegistry.fromConfig(config), agents, config);
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
    expect(dial.form).toMatchObject({ To: '+15550100000', From: '+15550009999', Timeout: '45', StatusCallback: 'https://parley.example/carriers/twilio/status' });
    expect(call).toMatchObject({ status: 'queued', carrier: 'twilio', carrierCallId: dial.callSid, recordingEnabled: true });
    const token = /name="token" value="([^"]+)"/.exec(dial.twiml ?? '')?.[1] ?? '';
    expect(dial.twiml).toContain('url="wss://media.parley.example/streams/twilio"');

    await expect(control.attachMedia(token, 'twilio', 'CAsomeoneelse')).rejects.toMatchObject({ code: 'unauthenticated' });
    await expect(control.attachMedia(`${token}x`, 'twilio', dial.callSid!)).rejects.toMatchObject({ code: 'unauthenticated' });
    expect(await control.attachMedia(token, 'twilio', dial.callSid!)).toMatchObject({ call: { status: 'in_progress' }, resume: '' });
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
    const bare = new CallControl(calls, new CarrierRegistry([]), agents, config);
    await expect(bare.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100000' })).rejects.toMatchObject({ code: 'service_unavailable' });
    await expect(control.placeOutbound('acc_1', { agentId: 'agt_2', to: '+15550100000' })).rejects.toMatchObject({ code: 'validation_error' });
    const noFrom = new CallControl(calls, CarrierRegistry.fromConfig(config), agents, Object.assign(new ServiceConfig(), { ...config, TWILIO_FROM_NUMBER: undefined }));
    await expect(noFrom.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100000' })).rejects.toMatchObject({
      code: 'validation_error',
      errors: [{ field: 'from', message: expect.stringContaining('TWILIO_FROM_NUMBER') }],
    });
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

  it('records each function the agent invoked as call.tool.called', async () => {
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100078' });
    await calls.toolCalled('acc_1', call.id, { name: 'lookup_order', kind: 'custom_function', arguments: { order: '42' }, ok: false, error: 'HTTP 500' });
    const event = (await outboxTypes(call.id)).find((e) => e.type === 'call.tool.called');
    expect(event?.data).toEqual({ name: 'lookup_order', kind: 'custom_function', arguments: { order: '42' }, ok: false, error: 'HTTP 500' });
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

  it('never reaps a transferred call for lack of media', async () => {
    const call = await control.placeOutbound('acc_1', { agentId: 'agt_1', to: '+15550100081' });
    await calls.transition('acc_1', call.id, () => ({ status: 'in_progress' }));
    await control.transfer('acc_1', call.id, '+15550100082');
    await dataSource.query(`UPDATE calls SET updated_at = now() - interval '1 day' WHERE id = $1`, [call.id]);
    await calls.failStuckCalls();
    expect((await calls.get('acc_1', call.id)).status).toBe('in_progress');
  });
});
