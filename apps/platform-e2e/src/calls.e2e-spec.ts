import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import WebSocket from 'ws';
import { parseWav, pcm16ToMulaw } from '@parley/audio';
import { FakeTwilioServer, signedTwilioWebhook } from '@parley/carrier-twilio';
import { ApiClient, EventStreamClient, RunningPlatform, waitFor } from '@parley/testing';

const KEY = 'vsk_calls_owner_key_00000001';
const OTHER = 'vsk_calls_other_key_00000001';
const stripe = new Stripe('sk_test_unused');
const FROM = '+15550009999';

/** One second of a 440 Hz tone as the caller's μ-law audio. */
function toneMulaw(seconds: number): Buffer {
  const samples = new Int16Array(8000 * seconds);
  for (let i = 0; i < samples.length; i++) samples[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000));
  return pcm16ToMulaw(samples);
}

describe('calls: records, state machine, Twilio, live events, recordings and call events to webhooks', () => {
  let platform: RunningPlatform;
  let twilio: FakeTwilioServer;
  let api: ApiClient;
  let receiver: Server;
  const received: { body: string; signature: string }[] = [];
  let secret: string;
  let agentId: string;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ body, signature: String(req.headers['service-signature']) });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    twilio = new FakeTwilioServer();
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${KEY}`, `globex:owner:${OTHER}`],
      env: {
        EGRESS_ALLOWLIST: '127.0.0.1',
        WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
        MAX_CONCURRENT_CALLS: '3',
        CALL_STUCK_SECONDS: '30', // the least allowed: three media heartbeats
        ...(await twilio.platformEnv(FROM)),
      },
    });
    api = platform.api(KEY);
    const endpoint = await api.post('/v1/webhook_endpoints', {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
      events: ['call.*'],
    });
    secret = endpoint.body.secret;
    agentId = (await api.post('/v1/agents', { name: 'Caller', languages: [{ code: 'en' }], record_calls: true })).body.id;
  });

  afterAll(async () => {
    await platform?.stop();
    await twilio?.stop();
    await new Promise((r) => receiver.close(r));
  });

  const events = (callId: string) =>
    received.map((r) => ({ ...r, event: JSON.parse(r.body) })).filter((r) => r.event.call_id === callId);


  const dialsTo = (to: string) => twilio.calls.filter((c) => c.action === 'create' && c.form['To'] === to);

  it('dials once for a retried request and follows Twilio from queued to ended, live on the event stream and in signed webhooks', async () => {
    const body = { agent_id: agentId, to: '+15550100000', variables: { name: 'Ada' }, metadata: { crm: '42' } };
    const first = await api.post('/v1/calls', body, { 'idempotency-key': 'dial-once' });
    const retry = await api.post('/v1/calls', body, { 'idempotency-key': 'dial-once' });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ object: 'call', status: 'queued', direction: 'outbound', to: '+15550100000', from: FROM, carrier: 'twilio' });
    expect(first.body).toMatchObject({ variables: { name: 'Ada' }, metadata: { crm: '42' }, summary: null, extracted: null });
    expect(retry.body.id).toBe(first.body.id);
    expect(dialsTo('+15550100000')).toHaveLength(1);
    const dial = dialsTo('+15550100000')[0];
    const sid = dial.callSid as string;
    expect(first.body.carrier_call_id).toBe(sid);
    expect(dial.form['StatusCallback']).toBe(`${platform.baseUrl}/carriers/twilio/status?call=${first.body.id}`);
    expect(dial.twiml).toContain(`<Stream url="${platform.mediaUrl}/streams/twilio">`);
    expect(dial.twiml).toMatch(/<Parameter name="token" value="[^"]+"\/>/);

    const stream = await EventStreamClient.open(`${platform.baseUrl}/v1/calls/${first.body.id}/events`, KEY);
    expect(stream.status).toBe(200);
    expect(stream.contentType).toMatch(/^text\/event-stream/);
    await stream.waitFor((e) => e.event === 'call.status' && e.data.status === 'queued');

    expect(await twilio.sendStatusCallback(sid, 'ringing')).toBe(204);
    await stream.waitFor((e) => e.event === 'call.status' && e.data.status === 'ringing');
    expect(await twilio.sendStatusCallback(sid, 'in-progress')).toBe(204);
    await stream.waitFor((e) => e.event === 'call.status' && e.data.status === 'in_progress');
    // A late, out-of-order ringing changes nothing.
    expect(await twilio.sendStatusCallback(sid, 'ringing')).toBe(204);

    const media = await twilio.connectMediaStream(sid);
    await media.sendAudio(toneMulaw(1));
    await stream.waitFor((e) => e.event === 'call.started');

    const ended = await api.post(`/v1/calls/${first.body.id}/end`);
    expect(ended.body).toMatchObject({ status: 'ended', end_reason: 'hangup' });
    expect(twilio.calls.some((c) => c.action === 'update' && c.callSid === sid && c.form['Status'] === 'completed')).toBe(true);
    expect((await media.closed).code).toBe(1000);
    await stream.ended;
    const statuses = stream.events.filter((e) => e.event === 'call.status').map((e) => e.data.status);
    expect(statuses).toEqual(['queued', 'ringing', 'in_progress', 'ended']);
    expect(stream.events.map((e) => e.event)).toEqual(expect.arrayContaining(['call.started', 'call.ended']));

    const again = await api.post(`/v1/calls/${first.body.id}/end`);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('conflict');
    // Twilio's own completed callback after the API ended the call is accepted and changes nothing.
    expect(await twilio.sendStatusCallback(sid, 'completed')).toBe(204);
    expect((await api.get(`/v1/calls/${first.body.id}`)).body.end_reason).toBe('hangup');

    const started = await waitFor(() => events(first.body.id).find((e) => e.event.type === 'call.started'));
    expect(started.event.data).toEqual({ agent_id: agentId, direction: 'outbound', to: '+15550100000', from: FROM });
    const delivered = await waitFor(() => events(first.body.id).find((e) => e.event.type === 'call.ended'));
    expect(delivered.event.data).toMatchObject({ turns: 0, end_reason: 'hangup' });
    expect(delivered.event.data.duration_seconds).toBeGreaterThan(0);
    expect(delivered.event).not.toHaveProperty('data.summary');
    for (const e of [started, delivered]) expect(() => stripe.webhooks.constructEvent(e.body, e.signature, secret, 300)).not.toThrow();
    const tampered = delivered.body.replace('hangup', 'completed');
    expect(() => stripe.webhooks.constructEvent(tampered, delivered.signature, secret, 300)).toThrow();
  }, 60_000);

  it('closes the carrier stream of a call ended through the API on the media worker’s EndStream command, not on the carrier', async () => {
    const call = (await api.post('/v1/calls', { agent_id: agentId, to: '+15550100040' })).body;
    await twilio.sendStatusCallback(call.carrier_call_id, 'in-progress');
    const media = await twilio.connectMediaStream(call.carrier_call_id);
    await waitFor(() => events(call.id).find((e) => e.event.type === 'call.started'));
    // Twilio's own stop is late: the stream closes only if the worker is told.
    twilio.streamsOutliveCalls = true;
    try {
      const endedAt = Date.now();
      expect((await api.post(`/v1/calls/${call.id}/end`)).body).toMatchObject({ status: 'ended', end_reason: 'hangup' });
      // Closed by the worker with the command's reason, well before a heartbeat (10 s) could have said the call is over.
      expect(await media.closed).toEqual({ code: 1000, reason: 'call ended: hangup' });
      expect(Date.now() - endedAt).toBeLessThan(5_000);
    } finally {
      twilio.streamsOutliveCalls = false;
    }
    const metrics = await (await fetch(`${platform.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/parley_media_commands_total\{command="end_stream",outcome="delivered"\} [1-9]/);
  });

  it('records the caller, tells webhooks, serves the file to key holders and through an expiring signed link', async () => {
    const call = (await api.post('/v1/calls', { agent_id: agentId, to: '+15550100003' })).body;
    const sid = call.carrier_call_id;
    await twilio.sendStatusCallback(sid, 'in-progress');
    const media = await twilio.connectMediaStream(sid);
    await media.sendAudio(toneMulaw(2));
    media.stop();
    await media.closed;
    const ready = await waitFor(() => events(call.id).find((e) => e.event.type === 'call.recording.ready'));
    expect(ready.event.data).toMatchObject({ recording_url: `${platform.baseUrl}/v1/calls/${call.id}/recording`, content_type: 'audio/wav' });
    // Two seconds of audio, placed on the call's timeline by the carrier's timestamps (from the stream's start).
    expect(ready.event.data.duration_seconds).toBeGreaterThanOrEqual(2);
    expect(ready.event.data.duration_seconds).toBeLessThan(2.5);
    // The stream ending is the end of the conversation.
    expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'ended', end_reason: 'completed', recording_available: true });

    const file = await fetch(`${platform.baseUrl}/v1/calls/${call.id}/recording`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('audio/wav');
    const wav = parseWav(Buffer.from(await file.arrayBuffer()));
    expect(wav.sampleRate).toBe(8000);
    expect(wav.samples.length).toBe(Math.round(ready.event.data.duration_seconds * 8000));
    expect(Math.max(...wav.samples.slice(-8000))).toBeGreaterThan(6000);
    expect((await platform.api(OTHER).get(`/v1/calls/${call.id}/recording`)).status).toBe(404);

    const link = (await api.get(`/v1/calls/${call.id}/recording_url`)).body;
    expect(link).toMatchObject({ object: 'recording_url', call_id: call.id, content_type: 'audio/wav', duration_seconds: ready.event.data.duration_seconds });
    expect(Date.parse(link.expires_at) - Date.now()).toBeGreaterThan(3500_000);
    const played = await fetch(link.url);
    expect(played.status).toBe(200);
    expect(Buffer.from(await played.arrayBuffer()).subarray(0, 4).toString()).toBe('RIFF');
    const forged = await fetch(link.url.replace(/token=([^&]{4})/, 'token=AAAA'));
    expect(forged.status).toBe(401);
    expect(forged.headers.get('content-type')).toMatch(/problem\+json/);

    const transcript = (await api.get(`/v1/calls/${call.id}/transcript`)).body;
    expect(transcript).toEqual({ object: 'transcript', call_id: call.id, final: true, turns: [], flow_transitions: [] });
  }, 60_000);

  it('answers an inbound call on a signed voice webhook, streams it, and refuses forged signatures', async () => {
    const voiceUrl = `${platform.baseUrl}/carriers/twilio/voice/${agentId}`;
    const statusCallbackUrl = `${platform.baseUrl}/carriers/twilio/status`;
    const forged = await twilio.placeInboundCall({ voiceUrl, from: '+15550177777', to: FROM, signature: 'forged', statusCallbackUrl });
    expect(forged.status).toBe(401);
    expect((await api.get('/v1/calls?direction=inbound')).body.data.filter((c: { from: string }) => c.from === '+15550177777')).toHaveLength(0);
    const forgedStatus = signedTwilioWebhook(statusCallbackUrl, { CallSid: 'CAforged', CallStatus: 'completed' }, 'not-the-token');
    const refused = await fetch(statusCallbackUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...forgedStatus.headers }, body: forgedStatus.body });
    expect(refused.status).toBe(401);

    const inbound = await twilio.placeInboundCall({ voiceUrl, from: '+15550188888', to: FROM, statusCallbackUrl });
    expect(inbound.status).toBe(200);
    expect(inbound.contentType).toMatch(/xml/);
    expect(inbound.twiml).toContain(`<Stream url="${platform.mediaUrl}/streams/twilio">`);
    const call = (await api.get('/v1/calls?direction=inbound')).body.data.find((c: { from: string }) => c.from === '+15550188888');
    expect(call).toMatchObject({ status: 'ringing', direction: 'inbound', to: FROM, carrier_call_id: inbound.sid, agent_id: agentId });

    const media = await twilio.connectMediaStream(inbound.sid);
    const started = await waitFor(() => events(call.id).find((e) => e.event.type === 'call.started'));
    expect(started.event.data).toEqual({ agent_id: agentId, direction: 'inbound', to: FROM, from: '+15550188888' });
    await media.sendAudio(toneMulaw(1));
    media.stop();
    await waitFor(() => events(call.id).find((e) => e.event.type === 'call.ended'));
    expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'ended', end_reason: 'completed' });
  }, 60_000);

  it('refuses a media stream without a genuine token', async () => {
    const ws = new WebSocket(`${platform.mediaUrl}/streams/twilio`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    ws.send(
      JSON.stringify({
        event: 'start',
        sequenceNumber: '1',
        streamSid: 'MZ00000000000000000000000000000001',
        start: {
          streamSid: 'MZ00000000000000000000000000000001',
          accountSid: twilio.accountSid,
          callSid: 'CA00000000000000000000000000000001',
          tracks: ['inbound'],
          customParameters: { token: 'e30.forged' },
          mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
        },
      }),
    );
    expect(await closed).toBe(1008);
  });

  it('hands injected events to the live call and its stream, and refuses them once it is over', async () => {
    const call = (await api.post('/v1/calls', { agent_id: agentId, to: '+15550100004' })).body;
    const stream = await EventStreamClient.open(`${platform.baseUrl}/v1/calls/${call.id}/events`, KEY);
    await stream.waitFor((e) => e.event === 'call.status');
    const injected = await api.post(`/v1/calls/${call.id}/events`, { name: 'payment_received', payload: { amount: 42 } });
    expect(injected.status).toBe(202);
    // No media stream attached yet: no conversation received it, its observers did.
    expect(injected.body).toMatchObject({ object: 'call_event', call_id: call.id, name: 'payment_received', payload: { amount: 42 }, delivered: false });
    expect(injected.body.id).toMatch(/^cev_/);
    const seen = await stream.waitFor((e) => e.event === 'call.event');
    const { delivered: _delivered, ...event } = injected.body;
    expect(seen.data).toEqual(event);
    expect((await api.post(`/v1/calls/${call.id}/events`, { name: 'bad name!' })).status).toBe(422);
    expect((await api.post(`/v1/calls/${call.id}/events`, { name: 'x', extra: 1 })).status).toBe(400);

    await api.post(`/v1/calls/${call.id}/end`);
    await stream.ended;
    expect(stream.events.map((e) => e.event)).toEqual(['call.status', 'call.event', 'call.ended', 'call.status']);
    expect((await api.post(`/v1/calls/${call.id}/events`, { name: 'late' })).status).toBe(409);

    // A stream opened on a call that is over sends the final status and ends at once.
    const late = await EventStreamClient.open(`${platform.baseUrl}/v1/calls/${call.id}/events`, KEY);
    await late.ended;
    expect(late.events.map((e) => [e.event, e.data.status])).toEqual([['call.status', 'ended']]);
    const missing = await EventStreamClient.open(`${platform.baseUrl}/v1/calls/call_missing/events`, KEY);
    expect(missing.status).toBe(404);
  }, 30_000);

  it('asks Twilio for machine detection and acts on a machine: hangup ends the call as voicemail', async () => {
    const agent = (await api.post('/v1/agents', { name: 'Hangs up on machines', languages: [{ code: 'en' }], conversation: { voicemail: 'hangup' } })).body;
    const call = (await api.post('/v1/calls', { agent_id: agent.id, to: '+15550100020' })).body;
    const dial = dialsTo('+15550100020')[0];
    expect(dial.form).toMatchObject({ MachineDetection: 'Enable', AsyncAmd: 'true', AsyncAmdStatusCallback: `${platform.baseUrl}/carriers/twilio/amd?call=${call.id}` });
    await twilio.sendStatusCallback(call.carrier_call_id, 'in-progress');
    expect(await twilio.sendMachineDetection(call.carrier_call_id, 'machine_end_beep')).toBe(204);
    expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'ended', end_reason: 'voicemail', answered_by: 'machine' });
    expect(twilio.calls.some((c) => c.action === 'update' && c.callSid === call.carrier_call_id && c.form['Status'] === 'completed')).toBe(true);
  });

  it('leaves the voicemail message on a machine, then hangs up', async () => {
    const agent = (
      await api.post('/v1/agents', {
        name: 'Leaves messages',
        languages: [{ code: 'en' }],
        conversation: { voicemail: 'message', voicemail_message: 'Hi {{name}}, please call us back.' },
      })
    ).body;
    const call = (await api.post('/v1/calls', { agent_id: agent.id, to: '+15550100021', variables: { name: 'Ada' } })).body;
    await twilio.sendStatusCallback(call.carrier_call_id, 'in-progress');
    const media = await twilio.connectMediaStream(call.carrier_call_id);
    await waitFor(() => events(call.id).find((e) => e.event.type === 'call.started'));
    expect(await twilio.sendMachineDetection(call.carrier_call_id, 'machine_start')).toBe(204);
    const ended = await waitFor(() => events(call.id).find((e) => e.event.type === 'call.ended'), 30_000);
    expect(ended.event.data.end_reason).toBe('voicemail');
    expect(media.receivedFrames).toBeGreaterThan(50); // the message, in the offline voice
    expect((await api.get(`/v1/calls/${call.id}/transcript`)).body.turns).toEqual([
      expect.objectContaining({ role: 'assistant', text: 'Hi Ada, please call us back.', interrupted: false }),
    ]);
    // A person answering changes nothing but the record.
    const human = (await api.post('/v1/calls', { agent_id: agent.id, to: '+15550100022' })).body;
    await twilio.sendStatusCallback(human.carrier_call_id, 'in-progress');
    await twilio.sendMachineDetection(human.carrier_call_id, 'human');
    expect((await api.get(`/v1/calls/${human.id}`)).body).toMatchObject({ status: 'in_progress', answered_by: 'human' });
    await api.post(`/v1/calls/${human.id}/end`);
  }, 60_000);

  it('brings the caller back when a transfer is not answered, on a new stream, instead of dropping the call', async () => {
    const agent = (
      await api.post('/v1/agents', { name: 'Front desk', mode: 'normal', transfer_number: '+15550100099', record_calls: true, languages: [{ code: 'en', greeting: 'Putting you through.' }] })
    ).body;
    const call = (await api.post('/v1/calls', { agent_id: agent.id, to: '+15550100023' })).body;
    await twilio.sendStatusCallback(call.carrier_call_id, 'in-progress');
    const first = await twilio.connectMediaStream(call.carrier_call_id);
    const transferred = await waitFor(() => events(call.id).find((e) => e.event.type === 'call.transferred'), 30_000);
    expect(transferred.event.data).toEqual({ destination: '+15550100099' });
    await first.closed; // Twilio stops the stream when the call moves to the <Dial>
    expect(twilio.callResources.get(call.carrier_call_id)?.twiml).toContain(`<Dial action="${platform.baseUrl}/carriers/twilio/transfer-result" method="POST">`);

    const back = await twilio.sendDialResult(call.carrier_call_id, 'no-answer');
    expect(back.status).toBe(200);
    expect(back.twiml).toContain(`<Stream url="${platform.mediaUrl}/streams/twilio">`);
    const second = await twilio.connectMediaStream(call.carrier_call_id);
    const ended = await waitFor(() => events(call.id).find((e) => e.event.type === 'call.ended'), 30_000);
    expect(ended.event.data.end_reason).toBe('completed');
    expect(second.receivedFrames).toBeGreaterThan(50);
    const texts = (await api.get(`/v1/calls/${call.id}/transcript`)).body.turns.map((t: { text: string }) => t.text);
    expect(texts).toEqual(['Putting you through.', 'I am sorry, I could not reach anyone. Please try again later. Goodbye.']);
    // One recording for the call: the second stream's goes on after the first's, and its turns count on after it.
    const ready = await waitFor(() => {
      const found = events(call.id).filter((e) => e.event.type === 'call.recording.ready');
      return found.length === 2 ? found.map((e) => e.event.data.duration_seconds as number) : undefined;
    }, 30_000);
    const turns = (await api.get(`/v1/calls/${call.id}/transcript`)).body.turns as { start_seconds: number; end_seconds: number }[];
    expect(turns[1].start_seconds).toBeGreaterThanOrEqual(turns[0].end_seconds);
    expect(ready[1]).toBeGreaterThan(ready[0]);
    expect(ready[1]).toBeGreaterThanOrEqual(turns[1].end_seconds - 0.1);
  }, 60_000);

  it('fails the call with the carrier’s reason when Twilio refuses to dial', async () => {
    twilio.failNext({ status: 400, code: 21211, message: "The 'To' number +15550100005 is not a valid phone number." });
    const res = await api.post('/v1/calls', { agent_id: agentId, to: '+15550100005' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'failed', end_reason: 'carrier_error' });
    expect(res.body.failure_reason).toContain('21211');
    await waitFor(() => events(res.body.id).find((e) => e.event.type === 'call.failed'));
  });

  it('records nobody answering as no_answer', async () => {
    const call = (await api.post('/v1/calls', { agent_id: agentId, to: '+15550100001' })).body;
    const given = await api.post(`/v1/calls/${call.id}/give-up`);
    expect(given.body).toMatchObject({ status: 'ended', end_reason: 'no_answer' });
  });

  it('refuses invalid numbers, unknown agents and other accounts’ calls', async () => {
    const bad = await api.post('/v1/calls', { agent_id: agentId, to: '555-0100' });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).toEqual(['to']);
    const noAgent = await api.post('/v1/calls', { agent_id: 'agt_missing', to: '+15550100000' });
    expect(noAgent.status).toBe(422);
    expect(noAgent.body.errors[0].field).toBe('agent_id');
    const mine = (await api.post('/v1/calls', { agent_id: agentId, to: '+15550100002' })).body;
    expect((await platform.api(OTHER).get(`/v1/calls/${mine.id}`)).status).toBe(404);
    expect((await platform.api(OTHER).post(`/v1/calls/${mine.id}/end`)).status).toBe(404);
    await api.post(`/v1/calls/${mine.id}/end`);
  });

  it('filters the list by status and refuses a bad filter', async () => {
    const ended = await api.get('/v1/calls?status=ended');
    expect(ended.body.data.every((c: { status: string }) => c.status === 'ended')).toBe(true);
    expect((await api.get('/v1/calls?status=dancing')).status).toBe(400);
  });

  it('answers 402 plan_limit_reached above the concurrent-call ceiling', async () => {
    const live = [];
    for (let i = 0; i < 3; i++) live.push((await api.post('/v1/calls', { agent_id: agentId, to: '+15550100010' })).body);
    const over = await api.post('/v1/calls', { agent_id: agentId, to: '+15550100010' });
    expect(over.status).toBe(402);
    expect(over.body.code).toBe('plan_limit_reached');
    for (const c of live.slice(1)) await api.post(`/v1/calls/${c.id}/end`);

    // The one left alone never gets media: it fails with a reason instead of staying live forever (after
    // CALL_STUCK_SECONDS and at most one reaper pass).
    const stuck = live[0];
    const deadline = Date.now() + 45_000;
    let status = '';
    while (Date.now() < deadline && status !== 'failed') {
      status = (await api.get(`/v1/calls/${stuck.id}`)).body.status;
      if (status !== 'failed') await new Promise((r) => setTimeout(r, 500));
    }
    const record = (await api.get(`/v1/calls/${stuck.id}`)).body;
    expect(record).toMatchObject({ status: 'failed', end_reason: 'no_media' });
    const types = await waitFor(() => {
      const t = events(stuck.id).map((e) => e.event.type);
      return t.includes('call.failed') && t.includes('call.ended') ? t : undefined;
    });
    expect(types.sort()).toEqual(['call.ended', 'call.failed']);
  }, 80_000);
});
