import { CarrierAdapter, CarrierError, isE164, isSipUri, isTerminalCarrierCallStatus } from './carrier-adapter';
import { FAKE_CARRIER_SIGNATURE_HEADER, FakeCarrier } from './fake-carrier';

const request = {
  to: '+15550001111',
  from: '+15550002222',
  streamUrl: 'wss://media.example.test/stream',
  streamToken: 'tok-1',
  statusCallbackUrl: 'https://parley.example.test/carrier/fake/status',
};

describe('FakeCarrier', () => {
  it('is a CarrierAdapter that records placed calls with sequential ids', async () => {
    const carrier: CarrierAdapter = new FakeCarrier();
    const fake = carrier as FakeCarrier;

    await expect(carrier.placeCall(request)).resolves.toEqual({ carrier: 'fake', carrierCallId: 'fake-call-1', status: 'queued' });
    await expect(carrier.placeCall({ ...request, to: '+15550003333' })).resolves.toMatchObject({ carrierCallId: 'fake-call-2' });

    expect(fake.placed.map((r) => r.to)).toEqual(['+15550001111', '+15550003333']);
    expect(fake.lastCall?.carrierCallId).toBe('fake-call-2');
    expect(fake.operations.map((o) => o.kind)).toEqual(['placeCall', 'placeCall']);
  });

  it('plays scripted statuses back as status callbacks its own parser reads', async () => {
    const fake = new FakeCarrier().scriptStatuses('ringing', 'no_answer');
    const { carrierCallId } = await fake.placeCall(request);

    const first = fake.nextStatusCallback(carrierCallId) ?? {};
    const second = fake.nextStatusCallback(carrierCallId, { durationSeconds: 0 }) ?? {};

    expect(fake.parseStatusCallback(first)).toMatchObject({ carrierCallId, status: 'ringing' });
    expect(fake.parseStatusCallback(second)).toMatchObject({ carrierCallId, status: 'no_answer', durationSeconds: 0 });
    expect(fake.nextStatusCallback(carrierCallId)).toBeUndefined();
    expect(fake.calls.get(carrierCallId)?.status).toBe('no_answer');
  });

  it('reports answeredBy, duration and the timestamp', () => {
    const fake = new FakeCarrier();
    const at = new Date('2025-01-02T03:04:05.000Z');
    const update = fake.parseStatusCallback(
      fake.statusCallback('x', 'completed', { durationSeconds: 42, answeredBy: 'machine', at }),
    );
    expect(update).toEqual({ carrierCallId: 'x', status: 'completed', durationSeconds: 42, answeredBy: 'machine', at });
  });

  it('answers a look-up with the status a callback moved the call to, delivered or not, and fails on request', async () => {
    const carrier = new FakeCarrier();
    const { carrierCallId } = await carrier.placeCall(request);
    carrier.statusCallback(carrierCallId, 'busy'); // built, never delivered: the look-up still tells

    await expect(carrier.fetchCall(carrierCallId)).resolves.toMatchObject({ carrierCallId, status: 'busy' });
    await expect(carrier.fetchCall('fake-call-99')).rejects.toMatchObject({ code: 'not_found' });
    carrier.failNext('fetchCall', 'rate_limited');
    await expect(carrier.fetchCall(carrierCallId)).rejects.toMatchObject({ code: 'rate_limited' });
    expect(carrier.operations.filter((op) => op.kind === 'fetchCall')).toHaveLength(3);
  });

  it('refuses unreadable status callbacks', () => {
    const fake = new FakeCarrier();
    expect(() => fake.parseStatusCallback({ CallId: 'x', Status: 'exploded' })).toThrow(CarrierError);
    expect(() => fake.parseStatusCallback({ Status: 'ringing' })).toThrow(/CallId/);
  });

  it('ends and transfers calls, refusing unknown calls and bad destinations', async () => {
    const fake = new FakeCarrier();
    const { carrierCallId } = await fake.placeCall(request);

    await fake.transferCall(carrierCallId, '+15559990000');
    await fake.transferCall(carrierCallId, 'sip:desk@pbx.example.test');
    await expect(fake.transferCall(carrierCallId, 'desk')).rejects.toMatchObject({ code: 'invalid_request' });
    await fake.endCall(carrierCallId);
    await fake.endCall(carrierCallId); // already over: not an error
    await expect(fake.transferCall(carrierCallId, '+15559990000')).rejects.toMatchObject({ code: 'call_state' });
    await expect(fake.endCall('nope')).rejects.toMatchObject({ code: 'not_found', carrier: 'fake' });

    expect(fake.transfers).toEqual([
      { carrierCallId, destination: '+15559990000' },
      { carrierCallId, destination: 'sip:desk@pbx.example.test' },
      { carrierCallId, destination: 'desk' },
      { carrierCallId, destination: '+15559990000' },
    ]);
    expect(fake.ended).toEqual([carrierCallId, carrierCallId, 'nope']);
    expect(fake.calls.get(carrierCallId)?.status).toBe('canceled');
  });

  it('fails operations on request', async () => {
    const fake = new FakeCarrier().failNext('placeCall', 'unauthorized').failNext('placeCall', new Error('boom'));
    await expect(fake.placeCall(request)).rejects.toMatchObject({ name: 'CarrierError', code: 'unauthorized' });
    await expect(fake.placeCall(request)).rejects.toThrow('boom');
    await expect(fake.placeCall(request)).resolves.toMatchObject({ carrierCallId: 'fake-call-1' });
    expect(fake.operations).toHaveLength(3);
  });

  it('verifies its signed webhooks and refuses forged or tampered ones', () => {
    const fake = new FakeCarrier({ secret: 's3cret' });
    const url = 'https://parley.example.test/carrier/fake/status';
    const signed = fake.signWebhook(url, { CallId: 'fake-call-1', Status: 'ringing' });

    expect(fake.verifyWebhook(signed)).toBe(true);
    expect(fake.verifyWebhook({ ...signed, headers: { 'X-Fake-Carrier-Signature': signed.headers[FAKE_CARRIER_SIGNATURE_HEADER] } })).toBe(true);
    expect(fake.verifyWebhook({ ...signed, params: { ...signed.params, Status: 'completed' } })).toBe(false);
    expect(fake.verifyWebhook({ ...signed, url: `${url}?x=1` })).toBe(false);
    expect(fake.verifyWebhook({ ...signed, headers: {} })).toBe(false);
    expect(new FakeCarrier({ secret: 'other' }).verifyWebhook(signed)).toBe(false);
  });

  it('parses inbound calls and answers them with the stream', () => {
    const fake = new FakeCarrier();
    const params = fake.inboundCall('+15550001111', '+15550002222');
    expect(fake.parseInbound(params)).toEqual({ carrierCallId: params['CallId'], from: '+15550001111', to: '+15550002222' });
    expect(() => fake.parseInbound({ From: '+1' })).toThrow(CarrierError);

    const answer = fake.answerInbound({ streamUrl: 'wss://m/s', streamToken: 't' });
    expect(answer.contentType).toBe('application/json');
    expect(JSON.parse(answer.body)).toEqual({ connect: { stream: { url: 'wss://m/s', token: 't' } } });
  });
});

describe('carrier helpers', () => {
  it('recognises E.164 numbers, SIP URIs and terminal statuses', () => {
    expect(isE164('+15550001111')).toBe(true);
    expect(isE164('15550001111')).toBe(false);
    expect(isE164('+0123')).toBe(false);
    expect(isSipUri('sip:desk@pbx.example.test')).toBe(true);
    expect(isSipUri('sips:desk@pbx.example.test;transport=tls')).toBe(true);
    expect(isSipUri('+15550001111')).toBe(false);
    expect(isTerminalCarrierCallStatus('completed')).toBe(true);
    expect(isTerminalCarrierCallStatus('in_progress')).toBe(false);
  });
});
