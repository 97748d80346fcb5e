import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { TwilioCarrier } from '../twilio-carrier';
import { FAKE_TWILIO_ACCOUNT_SID, FAKE_TWILIO_AUTH_TOKEN, FakeTwilioServer } from './fake-twilio-server';

describe('FakeTwilioServer', () => {
  let server: FakeTwilioServer;
  let base: string;

  beforeEach(async () => {
    server = new FakeTwilioServer();
    base = await server.start();
  });

  afterEach(async () => {
    await server.stop();
  });

  it('refuses wrong credentials with Twilio 401 error 20003', async () => {
    const res = await fetch(`${base}/2010-04-01/Accounts/${FAKE_TWILIO_ACCOUNT_SID}/Calls.json`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${FAKE_TWILIO_ACCOUNT_SID}:nope`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'To=%2B15550001111&From=%2B15550002222&Twiml=%3CResponse%2F%3E',
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="Twilio API"');
    expect(await res.json()).toEqual({
      code: 20003,
      message: 'Authenticate',
      detail: 'Your AccountSid or AuthToken was incorrect.',
      more_info: 'https://www.twilio.com/docs/errors/20003',
      status: 401,
    });
  });

  it('posts a signed status callback to the call StatusCallback that the adapter verifies', async () => {
    const received: Array<{ url: string; signature: string | undefined; body: string }> = [];
    const app: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({
          url: req.url ?? '',
          signature: req.headers['x-twilio-signature'] as string | undefined,
          body: Buffer.concat(chunks).toString(),
        });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    const callbackUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}/carriers/twilio/status`;
    try {
      const carrier = new TwilioCarrier({ accountSid: FAKE_TWILIO_ACCOUNT_SID, authToken: FAKE_TWILIO_AUTH_TOKEN, apiBaseUrl: base });
      const { carrierCallId } = await carrier.placeCall({
        to: '+15550001111',
        from: '+15550002222',
        streamUrl: 'wss://m.test/s',
        streamToken: 't',
        statusCallbackUrl: callbackUrl,
      });
      server.setCallStatus(carrierCallId, 'in-progress');

      expect(await server.sendStatusCallback(carrierCallId, 'completed', { answeredBy: 'human' })).toBe(204);

      const params = Object.fromEntries(new URLSearchParams(received[0].body));
      expect(carrier.verifyWebhook({ url: callbackUrl, headers: { 'x-twilio-signature': received[0].signature }, params })).toBe(true);
      expect(carrier.parseStatusCallback(params)).toMatchObject({
        carrierCallId,
        status: 'completed',
        answeredBy: 'human',
        durationSeconds: expect.any(Number),
      });
      const fetched = await carrier.client.calls(carrierCallId).fetch();
      expect(fetched.status).toBe('completed');
    } finally {
      await new Promise<void>((resolve) => app.close(() => resolve()));
    }
  });
});
