import { CarrierAdapter, CarrierError } from '@parley/carrier-core';
import { FakeTwilioServer, signedTwilioWebhook } from './testing/fake-twilio-server';
import { TwilioCarrier } from './twilio-carrier';

const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef';
const AUTH_TOKEN = 'test-auth-token-0123456789abcdef';
const request = {
  to: '+15550001111',
  from: '+15550002222',
  streamUrl: 'wss://media.parley.test/v1/media/twilio',
  streamToken: 'stream-token-123',
  statusCallbackUrl: 'https://parley.test/carriers/twilio/status',
};

describe('TwilioCarrier against FakeTwilioServer', () => {
  let server: FakeTwilioServer;
  let carrier: TwilioCarrier;

  beforeEach(async () => {
    server = new FakeTwilioServer({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN });
    carrier = new TwilioCarrier({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN, apiBaseUrl: await server.start() });
  });

  afterEach(async () => {
    await server.stop();
  });

  it('places a call with the credentials, a <Connect><Stream> TwiML carrying the token and status callbacks', async () => {
    const adapter: CarrierAdapter = carrier;
    const placed = await adapter.placeCall(request);

    expect(placed).toEqual({ carrier: 'twilio', carrierCallId: expect.stringMatching(/^CA[0-9a-f]{32}$/), status: 'queued' });
    expect(placed.carrierCallId).toHaveLength(34);
    expect(server.calls).toHaveLength(1);
    const sent = server.calls[0];
    expect(sent).toMatchObject({
      action: 'create',
      method: 'POST',
      path: `/2010-04-01/Accounts/${ACCOUNT_SID}/Calls.json`,
      auth: { username: ACCOUNT_SID, password: AUTH_TOKEN },
      authorized: true,
      status: 201,
      callSid: placed.carrierCallId,
    });
    expect(sent.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    expect(sent.form).toMatchObject({
      To: '+15550001111',
      From: '+15550002222',
      StatusCallback: 'https://parley.test/carriers/twilio/status',
      StatusCallbackMethod: 'POST',
      StatusCallbackEvent: ['initiated', 'ringing', 'answered', 'completed'],
    });
    expect(sent.form['MachineDetection']).toBeUndefined();
    expect(sent.form['Timeout']).toBeUndefined();
    expect(sent.twiml).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="wss://media.parley.test/v1/media/twilio">' +
        '<Parameter name="token" value="stream-token-123"/></Stream></Connect></Response>',
    );
    expect(server.callResources.get(placed.carrierCallId)).toMatchObject({ to: '+15550001111', status: 'queued' });
  });

  it('asks for asynchronous machine detection and a ring timeout when requested', async () => {
    await carrier.placeCall({ ...request, machineDetection: true, machineDetectionUrl: 'https://parley.test/carriers/twilio/amd', timeoutSeconds: 25 });
    expect(server.lastCall?.form).toMatchObject({
      MachineDetection: 'Enable',
      AsyncAmd: 'true',
      AsyncAmdStatusCallback: 'https://parley.test/carriers/twilio/amd',
      AsyncAmdStatusCallbackMethod: 'POST',
      Timeout: '25',
    });
  });

  it('transfers with a <Dial action> that reports how the transfer went, and reads the result', async () => {
    const placed = await carrier.placeCall(request);
    await carrier.transferCall(placed.carrierCallId, '+15550109876', { resultUrl: 'https://parley.test/carriers/twilio/transfer-result', timeoutSeconds: 20 });
    expect(server.lastCall?.twiml).toContain('<Dial action="https://parley.test/carriers/twilio/transfer-result" method="POST" timeout="20"><Number>+15550109876</Number></Dial>');
    expect(carrier.parseTransferResult({ CallSid: 'CA1', DialCallStatus: 'no-answer' })).toEqual({ carrierCallId: 'CA1', outcome: 'no_answer' });
    expect(carrier.parseTransferResult({ CallSid: 'CA1', DialCallStatus: 'completed' })).toEqual({ carrierCallId: 'CA1', outcome: 'answered' });
    expect(() => carrier.parseTransferResult({ CallSid: 'CA1', DialCallStatus: 'odd' })).toThrow();
    expect(carrier.hangupMarkup().body).toContain('<Hangup/>');
  });

  it('reads the machine-detection verdict: machines, fax and beeps are machines', () => {
    expect(carrier.parseMachineDetection({ CallSid: 'CA1', AnsweredBy: 'machine_end_beep' })).toEqual({ carrierCallId: 'CA1', answeredBy: 'machine' });
    expect(carrier.parseMachineDetection({ CallSid: 'CA1', AnsweredBy: 'human' })).toEqual({ carrierCallId: 'CA1', answeredBy: 'human' });
    expect(() => carrier.parseMachineDetection({ AnsweredBy: 'human' })).toThrow(/CallSid/);
  });

  it('escapes the stream token in the TwiML', async () => {
    await carrier.placeCall({ ...request, streamToken: 'a"b<c>&d' });
    expect(server.lastCall?.twiml).toContain('<Parameter name="token" value="a&quot;b&lt;c>&amp;d"/>');
  });

  it('fails with an unauthorized CarrierError on wrong credentials', async () => {
    const wrong = new TwilioCarrier({ accountSid: ACCOUNT_SID, authToken: 'wrong-token', apiBaseUrl: server.baseUrl });
    const error = await wrong.placeCall(request).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(CarrierError);
    expect(error).toMatchObject({ code: 'unauthorized', carrier: 'twilio', status: 401, carrierCode: 20003 });
    expect(server.lastCall).toMatchObject({ authorized: false, status: 401 });
    expect(server.callResources.size).toBe(0);

    const otherAccount = new TwilioCarrier({
      accountSid: 'AC99999999999999999999999999999999',
      authToken: AUTH_TOKEN,
      apiBaseUrl: server.baseUrl,
    });
    await expect(otherAccount.endCall('CA00000000000000000000000000000000')).rejects.toMatchObject({ code: 'unauthorized' });
  });

  it('maps Twilio errors and an unreachable API to CarrierError codes', async () => {
    server.failNext({ status: 429, code: 20429, message: 'Too Many Requests' });
    await expect(carrier.placeCall(request)).rejects.toMatchObject({ code: 'rate_limited', status: 429, carrierCode: 20429 });
    server.failNext({ status: 400, code: 21211, message: "Invalid 'To' Phone Number" });
    await expect(carrier.placeCall(request)).rejects.toMatchObject({ code: 'invalid_request', carrierCode: 21211 });
    await expect(carrier.endCall('CA00000000000000000000000000000000')).rejects.toMatchObject({ code: 'not_found', status: 404 });

    const base = server.baseUrl;
    await server.stop();
    await expect(new TwilioCarrier({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN, apiBaseUrl: base }).placeCall(request))
      .rejects.toMatchObject({ code: 'unavailable', carrier: 'twilio' });
  });

  it('ends a call with Status=completed, and ending it again is not an error', async () => {
    const { carrierCallId } = await carrier.placeCall(request);
    server.setCallStatus(carrierCallId, 'in-progress');

    await carrier.endCall(carrierCallId);

    expect(server.lastCall).toMatchObject({
      action: 'update',
      path: `/2010-04-01/Accounts/${ACCOUNT_SID}/Calls/${carrierCallId}.json`,
      form: { Status: 'completed' },
      authorized: true,
      status: 200,
    });
    expect(server.callResources.get(carrierCallId)?.status).toBe('completed');
    await expect(carrier.endCall(carrierCallId)).resolves.toBeUndefined();
  });

  it('reads a call back from the REST API as a status update: its status as the network moved it, and the duration once over', async () => {
    const placed = await carrier.placeCall(request);
    expect(await carrier.fetchCall(placed.carrierCallId)).toMatchObject({ carrierCallId: placed.carrierCallId, status: 'queued' });

    server.setCallStatus(placed.carrierCallId, 'in-progress');
    server.setCallStatus(placed.carrierCallId, 'completed');
    const over = await carrier.fetchCall(placed.carrierCallId);

    expect(over).toMatchObject({ carrierCallId: placed.carrierCallId, status: 'completed', durationSeconds: expect.any(Number) });
    expect(over.at).toBeInstanceOf(Date);
    expect(server.calls.at(-1)).toMatchObject({ action: 'fetch', method: 'GET', path: `/2010-04-01/Accounts/${ACCOUNT_SID}/Calls/${placed.carrierCallId}.json` });
  });

  it('reports a call Twilio does not know as a not_found CarrierError', async () => {
    await expect(carrier.fetchCall('CA00000000000000000000000000000000')).rejects.toMatchObject({ name: 'CarrierError', code: 'not_found' });
  });

  it('transfers to an E.164 number with <Dial><Number>', async () => {
    const { carrierCallId } = await carrier.placeCall(request);
    server.setCallStatus(carrierCallId, 'in-progress');

    await carrier.transferCall(carrierCallId, '+15559998888');

    expect(server.lastCall).toMatchObject({ action: 'update', callSid: carrierCallId, status: 200 });
    expect(server.lastCall?.twiml).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><Response><Dial><Number>+15559998888</Number></Dial></Response>',
    );
    expect(server.callResources.get(carrierCallId)?.twiml).toBe(server.lastCall?.twiml);
  });

  it('transfers to a SIP URI with <Dial><Sip>', async () => {
    const { carrierCallId } = await carrier.placeCall(request);
    server.setCallStatus(carrierCallId, 'in-progress');

    await carrier.transferCall(carrierCallId, 'sip:frontdesk@pbx.example.test;transport=tls');

    expect(server.lastCall?.twiml).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><Response><Dial><Sip>sip:frontdesk@pbx.example.test;transport=tls</Sip></Dial></Response>',
    );
  });

  it('refuses a bad transfer destination without calling Twilio, and a transfer of a finished call', async () => {
    const { carrierCallId } = await carrier.placeCall(request);
    const before = server.calls.length;
    await expect(carrier.transferCall(carrierCallId, 'front desk')).rejects.toMatchObject({ code: 'invalid_request' });
    expect(server.calls).toHaveLength(before);

    server.setCallStatus(carrierCallId, 'completed');
    await expect(carrier.transferCall(carrierCallId, '+15559998888')).rejects.toMatchObject({
      code: 'call_state',
      carrierCode: 21220,
    });
  });

  it('verifies a status callback the fake server signs and posts', async () => {
    const { carrierCallId } = await carrier.placeCall(request);
    const params = server.statusCallbackParams(carrierCallId, 'ringing');
    const signed = signedTwilioWebhook(request.statusCallbackUrl, params, AUTH_TOKEN);

    expect(carrier.verifyWebhook(signed)).toBe(true);
    expect(carrier.parseStatusCallback(signed.params)).toMatchObject({ carrierCallId, status: 'ringing' });
  });
});

describe('TwilioCarrier.verifyWebhook', () => {
  const carrier = new TwilioCarrier({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN });
  const url = 'https://parley.test/carriers/twilio/status?account=acme';
  const params = { CallSid: 'CA0123456789abcdef0123456789abcdef', CallStatus: 'completed', CallDuration: '42' };
  const signed = signedTwilioWebhook(url, params, AUTH_TOKEN);

  it('accepts a correctly signed callback, whatever the header case or form', () => {
    expect(carrier.verifyWebhook(signed)).toBe(true);
    expect(carrier.verifyWebhook({ ...signed, headers: { 'X-Twilio-Signature': signed.headers['x-twilio-signature'] } })).toBe(true);
    expect(carrier.verifyWebhook({ ...signed, headers: { 'x-twilio-signature': [signed.headers['x-twilio-signature']] } })).toBe(true);
  });

  it('refuses forged and tampered callbacks', () => {
    expect(carrier.verifyWebhook({ ...signed, headers: {} })).toBe(false);
    expect(carrier.verifyWebhook({ ...signed, headers: { 'x-twilio-signature': 'AAAAAAAAAAAAAAAAAAAAAAAAAAA=' } })).toBe(false);
    expect(carrier.verifyWebhook(signedTwilioWebhook(url, params, 'someone-elses-token'))).toBe(false);
    expect(carrier.verifyWebhook({ ...signed, params: { ...params, CallDuration: '4200' } })).toBe(false);
    expect(carrier.verifyWebhook({ ...signed, params: { ...params, Extra: 'x' } })).toBe(false);
    expect(carrier.verifyWebhook({ ...signed, url: 'https://evil.test/carriers/twilio/status?account=acme' })).toBe(false);
    expect(carrier.verifyWebhook({ ...signed, url: 'not a url' })).toBe(false);
  });
});

describe('TwilioCarrier.parseStatusCallback', () => {
  const carrier = new TwilioCarrier({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN });
  const sid = 'CA0123456789abcdef0123456789abcdef';

  it.each([
    ['queued', 'queued'],
    ['initiated', 'queued'],
    ['ringing', 'ringing'],
    ['in-progress', 'in_progress'],
    ['completed', 'completed'],
    ['busy', 'busy'],
    ['no-answer', 'no_answer'],
    ['failed', 'failed'],
    ['canceled', 'canceled'],
  ])('maps CallStatus %s to %s', (twilioStatus, status) => {
    expect(carrier.parseStatusCallback({ CallSid: sid, CallStatus: twilioStatus })).toMatchObject({
      carrierCallId: sid,
      status,
    });
  });

  it.each([
    ['human', 'human'],
    ['machine_start', 'machine'],
    ['machine_end_beep', 'machine'],
    ['machine_end_silence', 'machine'],
    ['machine_end_other', 'machine'],
    ['fax', 'machine'],
    ['unknown', 'unknown'],
  ])('maps AnsweredBy %s to %s', (answeredBy, expected) => {
    expect(carrier.parseStatusCallback({ CallSid: sid, CallStatus: 'in-progress', AnsweredBy: answeredBy }).answeredBy).toBe(
      expected,
    );
  });

  it('reads CallDuration and Timestamp', () => {
    const update = carrier.parseStatusCallback({
      CallSid: sid,
      CallStatus: 'completed',
      CallDuration: '73',
      Timestamp: 'Tue, 14 Nov 2023 18:30:00 +0000',
    });
    expect(update).toEqual({
      carrierCallId: sid,
      status: 'completed',
      durationSeconds: 73,
      at: new Date('2023-11-14T18:30:00.000Z'),
    });
  });

  it('leaves out what Twilio did not send, and stamps the time of parsing without Timestamp', () => {
    const before = Date.now();
    const update = carrier.parseStatusCallback({ CallSid: sid, CallStatus: 'ringing' });
    expect(update).toEqual({ carrierCallId: sid, status: 'ringing', at: expect.any(Date) });
    expect(update.at.getTime()).toBeGreaterThanOrEqual(before);
  });

  it('refuses a callback without CallSid or with an unknown CallStatus', () => {
    expect(() => carrier.parseStatusCallback({ CallStatus: 'ringing' })).toThrow(CarrierError);
    expect(() => carrier.parseStatusCallback({ CallSid: sid, CallStatus: 'exploded' })).toThrow(/CallStatus/);
    expect(() => carrier.parseStatusCallback({ CallSid: sid, CallStatus: 'toString' })).toThrow(CarrierError);
  });
});

describe('TwilioCarrier inbound calls', () => {
  const carrier = new TwilioCarrier({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN });

  it('parses CallSid, From and To', () => {
    expect(
      carrier.parseInbound({ CallSid: 'CAabc', From: '+15550001111', To: '+15550002222', CallStatus: 'ringing', Direction: 'inbound' }),
    ).toEqual({ carrierCallId: 'CAabc', from: '+15550001111', to: '+15550002222' });
    expect(() => carrier.parseInbound({ From: '+15550001111', To: '+15550002222' })).toThrow(CarrierError);
  });

  it('answers with <Connect><Stream> TwiML carrying the stream token', () => {
    expect(carrier.answerInbound({ streamUrl: 'wss://media.parley.test/in', streamToken: 'tok-9' })).toEqual({
      contentType: 'text/xml',
      body:
        '<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="wss://media.parley.test/in">' +
        '<Parameter name="token" value="tok-9"/></Stream></Connect></Response>',
    });
  });
});

describe('TwilioCarrier configuration', () => {
  it('requires credentials and an http(s) apiBaseUrl', () => {
    expect(() => new TwilioCarrier({ accountSid: '', authToken: AUTH_TOKEN })).toThrow(CarrierError);
    expect(() => new TwilioCarrier({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN, apiBaseUrl: 'ftp://x' })).toThrow(/http/);
  });

  it('keeps the path of apiBaseUrl as a prefix and ignores TWILIO_EDGE/TWILIO_REGION for the host', async () => {
    const { createServer } = await import('node:http');
    const seen: string[] = [];
    const proxy = createServer((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 20404, message: 'nope', more_info: '', status: 404 }));
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const { port } = proxy.address() as { port: number };
    process.env['TWILIO_REGION'] = 'au1';
    try {
      const carrier = new TwilioCarrier({
        accountSid: ACCOUNT_SID,
        authToken: AUTH_TOKEN,
        apiBaseUrl: `http://127.0.0.1:${port}/twilio/`,
      });
      await expect(carrier.endCall('CAx')).rejects.toMatchObject({ code: 'not_found' });
      expect(seen).toEqual([`/twilio/2010-04-01/Accounts/${ACCOUNT_SID}/Calls/CAx.json`]);
    } finally {
      delete process.env['TWILIO_REGION'];
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});
