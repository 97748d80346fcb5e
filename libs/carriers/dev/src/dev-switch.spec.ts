import { DevCarrier } from './dev-carrier';
import { DevSwitch } from './dev-switch';
import { DEV_CARRIER_NUMBER, DEV_PHONE_NUMBER, DEV_SIGNATURE_HEADER } from './dev-wire';
import { DevPhoneClient, serveDevSwitch } from './testing/dev-phone-client';
import { ReceivedWebhook, WebhookReceiver } from './testing/webhook-receiver';

const SECRET = 'dev-switch-spec-secret-key-0000000000000001';
const STREAM_URL = 'ws://127.0.0.1:1/streams/dev';

describe('DevSwitch: the dev carrier network, with real pages on its socket', () => {
  let receiver: WebhookReceiver;
  let served: Awaited<ReturnType<typeof serveDevSwitch>>;
  let carrier: DevCarrier;
  let pages: DevPhoneClient[];

  async function start(options: Partial<ConstructorParameters<typeof DevSwitch>[0]> = {}) {
    receiver = new WebhookReceiver();
    const publicUrl = await receiver.start();
    served = await serveDevSwitch(new DevSwitch({ secret: SECRET, publicUrl, machineDetectionDelayMs: 0, transferConnectMs: 0, ...options }));
    carrier = new DevCarrier({ switchUrl: served.url, secret: SECRET });
  }

  const socketUrl = () => `${served.url.replace('http', 'ws')}/dev/phone/socket`;
  const page = async () => {
    const client = await DevPhoneClient.connect(socketUrl());
    pages.push(client);
    return client;
  };

  beforeEach(async () => {
    pages = [];
    await start();
  });

  afterEach(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await served.stop();
    await receiver.stop();
  });

  /** Places a call as the calls service does, its callbacks naming the call on their URL. */
  function place(extra: Partial<Parameters<DevCarrier['placeCall']>[0]> = {}) {
    return carrier.placeCall({
      to: '+15555550111',
      from: DEV_CARRIER_NUMBER,
      agentId: 'agt_frontdesk',
      streamUrl: STREAM_URL,
      streamToken: 'stream-token-1',
      statusCallbackUrl: `${receiver.url}/carriers/dev/status?call=call_1`,
      ...extra,
    });
  }

  /** A webhook as the calls service sees it: verified by DevCarrier (so signed with the derived key). */
  function verified(hook: ReceivedWebhook): Record<string, string> {
    expect(carrier.verifyWebhook({ url: hook.url, headers: hook.headers as Record<string, string>, params: hook.params })).toBe(true);
    return hook.params;
  }

  const status = (id: string, value: string) => receiver.next((h) => h.params['CallId'] === id && h.params['Status'] === value && h.path === '/carriers/dev/status');

  it('rings every open page with the call’s numbers and agent, and reports ringing', async () => {
    const [a, b] = [await page(), await page()];
    const placed = await place();
    expect(placed).toEqual({ carrier: 'dev', carrierCallId: expect.stringMatching(/^DV[0-9a-f]{32}$/), status: 'queued' });
    for (const p of [a, b]) {
      expect((await p.next('ring')).call).toEqual({ id: placed.carrierCallId, direction: 'outbound', to: '+15555550111', from: DEV_CARRIER_NUMBER, agent_id: 'agt_frontdesk' });
    }
    const ringing = verified(await status(placed.carrierCallId, 'ringing'));
    expect(carrier.parseStatusCallback(ringing)).toMatchObject({ carrierCallId: placed.carrierCallId, status: 'ringing' });
    // A page opened while the call rings sees it at once.
    expect((await page()).messages[0]).toMatchObject({ type: 'hello', number: DEV_PHONE_NUMBER, ringing: [{ id: placed.carrierCallId }] });
  });

  it('gives the call to the first page that answers: its stream, in_progress; the others stop ringing', async () => {
    const [a, b] = [await page(), await page()];
    const { carrierCallId: id } = await place();
    await a.next('ring');
    await b.next('ring');
    a.send({ type: 'answer', call_id: id });
    expect(await a.next('connected')).toEqual({ type: 'connected', call_id: id, stream_url: STREAM_URL, stream_token: 'stream-token-1' });
    expect(await b.next('ring-stop')).toEqual({ type: 'ring-stop', call_id: id, reason: 'answered_elsewhere' });
    b.send({ type: 'answer', call_id: id });
    expect((await b.next('error')).message).toMatch(/answered on another phone/);
    verified(await status(id, 'in_progress'));
    expect(receiver.statuses(id)).toEqual(['ringing', 'in_progress']);
    expect(await carrier.fetchCall(id)).toMatchObject({ carrierCallId: id, status: 'in_progress', answeredBy: 'human' });
    expect(b.messages.some((m) => m.type === 'connected')).toBe(false);
  });

  it('reports busy when a page declines, and every page stops ringing', async () => {
    const [a, b] = [await page(), await page()];
    const { carrierCallId: id } = await place();
    await a.next('ring');
    b.send({ type: 'decline', call_id: id });
    expect(await a.next('ring-stop')).toMatchObject({ call_id: id, reason: 'declined' });
    verified(await status(id, 'busy'));
    expect(receiver.statuses(id)).toEqual(['ringing', 'busy']);
  });

  it('rings out to no_answer after the call’s ring time', async () => {
    const a = await page();
    const { carrierCallId: id } = await place({ timeoutSeconds: 1 });
    await a.next('ring');
    expect(await a.next('ring-stop', undefined, 5_000)).toMatchObject({ call_id: id, reason: 'no_answer' });
    const over = carrier.parseStatusCallback(verified(await status(id, 'no_answer')));
    expect(over).toMatchObject({ status: 'no_answer', durationSeconds: 0 });
    a.send({ type: 'answer', call_id: id });
    expect((await a.next('error')).message).toMatch(/not ringing/);
  });

  it('completes the call when the page hangs up, with its duration', async () => {
    const a = await page();
    const { carrierCallId: id } = await place();
    await a.next('ring');
    a.send({ type: 'answer', call_id: id });
    await a.next('connected');
    a.send({ type: 'hangup', call_id: id });
    expect(await a.next('ended')).toEqual({ type: 'ended', call_id: id, reason: 'hangup' });
    expect(carrier.parseStatusCallback(verified(await status(id, 'completed')))).toMatchObject({ status: 'completed', durationSeconds: 0 });
    expect(receiver.statuses(id)).toEqual(['ringing', 'in_progress', 'completed']);
  });

  it('completes the calls of a page that goes away', async () => {
    const a = await page();
    const { carrierCallId: id } = await place();
    await a.next('ring');
    a.send({ type: 'answer', call_id: id });
    await a.next('connected');
    await a.close();
    await status(id, 'completed');
  });

  it('answers as a machine: the verdict goes to the machine-detection URL after the answer', async () => {
    const a = await page();
    const { carrierCallId: id } = await place({ machineDetection: true, machineDetectionUrl: `${receiver.url}/carriers/dev/amd?call=call_1` });
    await a.next('ring');
    a.send({ type: 'answer', call_id: id, as: 'machine' });
    await a.next('connected');
    const verdict = verified(await receiver.next((h) => h.path === '/carriers/dev/amd'));
    expect(carrier.parseMachineDetection(verdict)).toEqual({ carrierCallId: id, answeredBy: 'machine' });
    expect(receiver.statuses(id)).toEqual(['ringing', 'in_progress']);
  });

  it('posts no verdict when machine detection was not asked for', async () => {
    const a = await page();
    const { carrierCallId: id } = await place();
    await a.next('ring');
    a.send({ type: 'answer', call_id: id, as: 'machine' });
    await status(id, 'in_progress');
    a.send({ type: 'hangup', call_id: id });
    await status(id, 'completed');
    expect(receiver.received.filter((h) => h.path.endsWith('/amd'))).toEqual([]);
  });

  it('transfers: the page shows the number and its leg ends, the result is answered, and the call completes', async () => {
    const a = await page();
    const { carrierCallId: id } = await place();
    await a.next('ring');
    a.send({ type: 'answer', call_id: id });
    await a.next('connected');
    await carrier.transferCall(id, '+15555550177', { resultUrl: `${receiver.url}/carriers/dev/transfer-result` });
    expect(await a.next('transferring')).toEqual({ type: 'transferring', call_id: id, destination: '+15555550177' });
    expect(await a.next('ended')).toEqual({ type: 'ended', call_id: id, reason: 'transferred', destination: '+15555550177' });
    const result = verified(await receiver.next((h) => h.path === '/carriers/dev/transfer-result'));
    expect(carrier.parseTransferResult(result)).toEqual({ carrierCallId: id, outcome: 'answered' });
    await status(id, 'completed');
    const order = receiver.received.filter((h) => h.params['CallId'] === id).map((h) => h.params['Outcome'] ?? h.params['Status']);
    expect(order).toEqual(['ringing', 'in_progress', 'answered', 'completed']);
  });

  it('refuses to transfer a call that is not answered, or to something that is not a number', async () => {
    const { carrierCallId: id } = await place();
    await expect(carrier.transferCall(id, '+15555550177')).rejects.toMatchObject({ code: 'call_state' });
    await expect(carrier.transferCall(id, 'nowhere')).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('ends the page’s leg when Parley hangs up, and cancels a call still ringing', async () => {
    const a = await page();
    const first = await place();
    await a.next('ring', (m) => m.call.id === first.carrierCallId);
    a.send({ type: 'answer', call_id: first.carrierCallId });
    await a.next('connected');
    await carrier.endCall(first.carrierCallId);
    expect(await a.next('ended')).toEqual({ type: 'ended', call_id: first.carrierCallId, reason: 'remote_hangup' });
    await status(first.carrierCallId, 'completed');
    // Ending it again is no error, as on a phone carrier.
    await expect(carrier.endCall(first.carrierCallId)).resolves.toBeUndefined();

    const second = await place();
    await a.next('ring', (m) => m.call.id === second.carrierCallId);
    await carrier.endCall(second.carrierCallId);
    expect(await a.next('ring-stop', (m) => m.call_id === second.carrierCallId)).toMatchObject({ reason: 'canceled' });
    await status(second.carrierCallId, 'canceled');
    expect(await carrier.fetchCall(second.carrierCallId)).toMatchObject({ status: 'canceled', durationSeconds: 0 });
  });

  it('calls an agent from a page: the inbound webhook, the stream the markup names, then completed on hang-up', async () => {
    receiver.respond = (hook) =>
      hook.path === '/carriers/dev/voice/agt_frontdesk'
        ? { status: 200, contentType: 'application/json', body: carrier.answerInbound({ streamUrl: STREAM_URL, streamToken: 'inbound-token' }).body }
        : { status: 204 };
    const a = await page();
    a.send({ type: 'dial', agent_id: 'agt_frontdesk' });
    const dialing = await a.next('dialing');
    expect(dialing.call).toMatchObject({ direction: 'inbound', from: DEV_PHONE_NUMBER, to: DEV_CARRIER_NUMBER, agent_id: 'agt_frontdesk' });
    const id = dialing.call.id;
    const voice = verified(await receiver.next((h) => h.path === '/carriers/dev/voice/agt_frontdesk'));
    expect(carrier.parseInbound(voice)).toEqual({ carrierCallId: id, from: DEV_PHONE_NUMBER, to: DEV_CARRIER_NUMBER });
    expect(await a.next('connected')).toEqual({ type: 'connected', call_id: id, stream_url: STREAM_URL, stream_token: 'inbound-token' });
    verified(await status(id, 'in_progress'));
    a.send({ type: 'hangup', call_id: id });
    await status(id, 'completed');
  });

  it('tells the page why the gateway refused its call to an agent', async () => {
    receiver.respond = () => ({ status: 404, contentType: 'application/problem+json', body: JSON.stringify({ code: 'not_found', detail: 'No agent agt_missing.' }) });
    const a = await page();
    a.send({ type: 'dial', agent_id: 'agt_missing', from: '+15555550144' });
    expect(await a.next('ended')).toMatchObject({ reason: 'rejected', message: '404 No agent agt_missing.' });
    a.send({ type: 'dial', agent_id: '' });
    expect((await a.next('error')).message).toMatch(/agent/);
  });

  it('delivers webhooks for PUBLIC_URL to the gateway it runs in, signed over their PUBLIC_URL form', async () => {
    await served.stop();
    const publicUrl = 'https://parley.example';
    served = await serveDevSwitch(new DevSwitch({ secret: SECRET, publicUrl, deliverTo: () => receiver.url }));
    carrier = new DevCarrier({ switchUrl: served.url, secret: SECRET });
    const { carrierCallId: id } = await place({ statusCallbackUrl: `${publicUrl}/carriers/dev/status?call=call_1` });
    const ringing = await status(id, 'ringing');
    expect(ringing.url).toBe(`${receiver.url}/carriers/dev/status?call=call_1`);
    expect(carrier.verifyWebhook({ url: `${publicUrl}/carriers/dev/status?call=call_1`, headers: ringing.headers as Record<string, string>, params: ringing.params })).toBe(true);
  });

  it('serves the page to anyone but its API only with the key derived from SECRET_KEY, and its socket only to its own origin', async () => {
    const html = await fetch(`${served.url}/dev/phone`);
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await html.text()).toContain('/dev/phone/socket');

    const stranger = new DevCarrier({ switchUrl: served.url, secret: 'another-deployment-secret-key-000000000001' });
    await expect(stranger.placeCall({ to: '+15555550111', from: DEV_CARRIER_NUMBER, streamUrl: STREAM_URL, streamToken: 't', statusCallbackUrl: `${receiver.url}/s` })).rejects.toMatchObject({ code: 'unauthorized' });
    await expect(DevPhoneClient.connect(socketUrl(), { origin: 'https://evil.example' })).rejects.toThrow(/403/);
    const own = await DevPhoneClient.connect(socketUrl(), { origin: served.url });
    pages.push(own);
    expect(own.open).toBe(true);
    // Webhooks carry the signature header.
    const { carrierCallId } = await place();
    expect((await status(carrierCallId, 'ringing')).headers[DEV_SIGNATURE_HEADER]).toMatch(/^[0-9a-f]{64}$/);
  });
});
