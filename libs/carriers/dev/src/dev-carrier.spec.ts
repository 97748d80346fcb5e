import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { CarrierError } from '@parley/carrier-core';
import { DevCarrier } from './dev-carrier';
import { DevSwitch } from './dev-switch';
import { DEV_CARRIER_NUMBER, DEV_SIGNATURE_HEADER, devCarrierKeys, signDevWebhook } from './dev-wire';
import { serveDevSwitch } from './testing/dev-phone-client';

const SECRET = 'dev-carrier-spec-secret-key-000000000000001';
const URL_ = 'https://parley.example/carriers/dev/status?call=call_1';

describe('DevCarrier: the calls service’s side of the dev carrier', () => {
  const carrier = new DevCarrier({ switchUrl: 'http://127.0.0.1:1', secret: SECRET });
  const signed = (params: Record<string, string>, secret = SECRET, url = URL_) => ({
    url,
    params,
    headers: { [DEV_SIGNATURE_HEADER]: signDevWebhook(devCarrierKeys(secret).webhookKey, url, params) },
  });

  it('accepts webhooks signed with the key derived from the same SECRET_KEY and nothing else', () => {
    const params = { CallId: 'DV1', Status: 'ringing' };
    expect(carrier.verifyWebhook(signed(params))).toBe(true);
    expect(carrier.verifyWebhook(signed(params, 'another-deployment-secret-key-000000000001'))).toBe(false);
    expect(carrier.verifyWebhook({ ...signed(params), params: { ...params, Status: 'completed' } })).toBe(false);
    expect(carrier.verifyWebhook({ ...signed(params), url: URL_.replace('call_1', 'call_2') })).toBe(false);
    expect(carrier.verifyWebhook({ url: URL_, params, headers: {} })).toBe(false);
    // The API key and the webhook key are different keys.
    expect(devCarrierKeys(SECRET).apiKey).not.toBe(devCarrierKeys(SECRET).webhookKey.toString('base64url'));
  });

  it('reads status callbacks, inbound calls, machine verdicts and transfer results', () => {
    expect(carrier.parseStatusCallback({ CallId: 'DV1', Status: 'completed', Duration: '12', AnsweredBy: 'human', Timestamp: '2026-11-25T01:02:03.000Z' })).toEqual({
      carrierCallId: 'DV1',
      status: 'completed',
      durationSeconds: 12,
      answeredBy: 'human',
      at: new Date('2026-11-25T01:02:03.000Z'),
    });
    expect(carrier.parseInbound({ CallId: 'DV2', From: '+15555550123', To: DEV_CARRIER_NUMBER })).toEqual({ carrierCallId: 'DV2', from: '+15555550123', to: DEV_CARRIER_NUMBER });
    expect(carrier.parseMachineDetection({ CallId: 'DV3', AnsweredBy: 'machine' })).toEqual({ carrierCallId: 'DV3', answeredBy: 'machine' });
    expect(carrier.parseTransferResult({ CallId: 'DV4', Outcome: 'no_answer' })).toEqual({ carrierCallId: 'DV4', outcome: 'no_answer' });
    for (const bad of [
      () => carrier.parseStatusCallback({ CallId: 'DV1', Status: 'ringing-ish' }),
      () => carrier.parseStatusCallback({ Status: 'ringing' }),
      () => carrier.parseInbound({ CallId: 'DV2', From: '+15555550123' }),
      () => carrier.parseMachineDetection({ CallId: 'DV3', AnsweredBy: 'robot' }),
      () => carrier.parseTransferResult({ CallId: 'DV4', Outcome: 'maybe' }),
    ]) {
      expect(bad).toThrow(expect.objectContaining({ code: 'invalid_request', carrier: 'dev' }));
    }
  });

  it('answers inbound calls with a JSON document naming the stream and its token', () => {
    const markup = carrier.answerInbound({ streamUrl: 'wss://media.example/streams/dev', streamToken: 'tok' });
    expect(markup.contentType).toBe('application/json');
    expect(JSON.parse(markup.body)).toEqual({ stream: { url: 'wss://media.example/streams/dev', token: 'tok' } });
    expect(JSON.parse(carrier.hangupMarkup().body)).toEqual({ hangup: true });
  });

  describe('over the switch’s REST API', () => {
    let served: Awaited<ReturnType<typeof serveDevSwitch>>;
    let rest: DevCarrier;
    const request = {
      to: '+15555550111',
      from: DEV_CARRIER_NUMBER,
      streamUrl: 'ws://127.0.0.1:1/streams/dev',
      streamToken: 'tok',
      statusCallbackUrl: 'http://127.0.0.1:1/carriers/dev/status',
    };

    beforeEach(async () => {
      served = await serveDevSwitch(new DevSwitch({ secret: SECRET, publicUrl: 'http://127.0.0.1:1' }));
      rest = new DevCarrier({ switchUrl: served.url, secret: SECRET });
    });
    afterEach(() => served.stop());

    it('places, looks up and ends a call', async () => {
      const placed = await rest.placeCall({ ...request, timeoutSeconds: 20 });
      expect(placed).toMatchObject({ carrier: 'dev', status: 'queued' });
      expect(await rest.fetchCall(placed.carrierCallId)).toMatchObject({ carrierCallId: placed.carrierCallId, status: expect.stringMatching(/^(queued|ringing)$/) });
      await rest.endCall(placed.carrierCallId);
      expect(await rest.fetchCall(placed.carrierCallId)).toMatchObject({ status: 'canceled', durationSeconds: 0 });
    });

    it('says not_found for a call the switch does not know, and invalid_request for a call it cannot place', async () => {
      await expect(rest.fetchCall('DV0')).rejects.toMatchObject({ code: 'not_found' });
      await expect(rest.endCall('DV0')).rejects.toMatchObject({ code: 'not_found' });
      await expect(rest.placeCall({ ...request, statusCallbackUrl: 'not a url' })).rejects.toMatchObject({ code: 'invalid_request' });
      await expect(rest.placeCall({ ...request, to: '' })).rejects.toMatchObject({ code: 'invalid_request' });
    });

    it('is refused with another deployment’s key', async () => {
      const stranger = new DevCarrier({ switchUrl: served.url, secret: 'another-deployment-secret-key-000000000001' });
      await expect(stranger.fetchCall('DV0')).rejects.toMatchObject({ code: 'unauthorized', status: 401 });
    });
  });

  it('says unavailable when no switch answers, or the gateway serves none', async () => {
    await expect(carrier.placeCall({ to: '+15555550111', from: DEV_CARRIER_NUMBER, streamUrl: 'ws://x', streamToken: 't', statusCallbackUrl: 'http://x/s' })).rejects.toBeInstanceOf(CarrierError);
    const noSwitch: Server = createServer((_req, res) => res.writeHead(404, { 'content-type': 'application/problem+json' }).end('{"code":"not_found"}'));
    await new Promise<void>((resolve) => noSwitch.listen(0, '127.0.0.1', resolve));
    try {
      const elsewhere = new DevCarrier({ switchUrl: `http://127.0.0.1:${(noSwitch.address() as AddressInfo).port}`, secret: SECRET });
      await expect(elsewhere.placeCall({ to: '+15555550111', from: DEV_CARRIER_NUMBER, streamUrl: 'ws://x', streamToken: 't', statusCallbackUrl: 'http://x/s' })).rejects.toMatchObject({
        code: 'unavailable',
        message: expect.stringMatching(/no dev switch is served/),
      });
    } finally {
      await new Promise((resolve) => noSwitch.close(resolve));
    }
  });
});
