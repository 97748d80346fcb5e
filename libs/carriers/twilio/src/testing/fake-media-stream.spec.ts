import { MediaStreamEvent } from '@parley/carrier-core';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import WebSocket, { WebSocketServer } from 'ws';
import { TwilioCarrier } from '../twilio-carrier';
import { TwilioMediaStreamProtocol } from '../twilio-media-stream';
import { FakeMediaStream, parseConnectStreamTwiml } from './fake-media-stream';
import { FAKE_TWILIO_ACCOUNT_SID, FAKE_TWILIO_AUTH_TOKEN, FakeTwilioServer } from './fake-twilio-server';

jest.setTimeout(20_000);

const protocol = new TwilioMediaStreamProtocol();

/** One stream as the media worker would see it: Twilio's frames parsed with TwilioMediaStreamProtocol. */
class StreamConnection {
  readonly events: Array<{ event: MediaStreamEvent; at: number }> = [];
  readonly raw: Array<Record<string, unknown>> = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  streamId = '';
  private readonly waiters: Array<() => void> = [];

  constructor(
    readonly ws: WebSocket,
    readonly url: string,
    readonly headers: IncomingHttpHeaders,
  ) {
    ws.on('message', (data) => {
      const text = data.toString();
      this.raw.push(JSON.parse(text) as Record<string, unknown>);
      const event = protocol.parse(text);
      if (event) {
        if (event.type === 'start') this.streamId = event.streamId;
        this.events.push({ event, at: performance.now() });
      }
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  of<T extends MediaStreamEvent['type']>(type: T): Array<Extract<MediaStreamEvent, { type: T }>> {
    return this.events.map((e) => e.event).filter((e): e is Extract<MediaStreamEvent, { type: T }> => e.type === type);
  }

  /** Resolves once `check` holds (checked now and after every frame). */
  async until<T>(check: () => T | undefined | false, timeoutMs = 10_000): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const value = check();
      if (value) return value;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error('StreamConnection: condition not met in time');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** When the mark `name` came back. */
  markAt(name: string): Promise<number> {
    return this.until(() => this.events.find((e) => e.event.type === 'mark' && e.event.name === name)?.at);
  }

  send(frame: string): void {
    this.ws.send(frame);
  }
}

/** A stand-in media worker endpoint: a `ws` server on 127.0.0.1 that can refuse upgrades. */
class StreamServer {
  readonly connections: StreamConnection[] = [];
  refuse: { status: number; body: string } | undefined;
  private readonly http: Server = createServer((_req, res) => res.writeHead(404).end());
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly waiters: Array<(c: StreamConnection) => void> = [];
  url = '';

  async start(): Promise<string> {
    this.http.on('upgrade', (req, socket, head) => {
      if (this.refuse) {
        const { status, body } = this.refuse;
        socket.end(`HTTP/1.1 ${status} Forbidden\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        const connection = new StreamConnection(ws, req.url ?? '', req.headers);
        this.connections.push(connection);
        for (const wake of this.waiters.splice(0)) wake(connection);
      });
    });
    await new Promise<void>((resolve) => this.http.listen(0, '127.0.0.1', resolve));
    this.url = `ws://127.0.0.1:${(this.http.address() as AddressInfo).port}/media`;
    return this.url;
  }

  /** The `index`th connection (already made or to come). */
  async connection(index = 0): Promise<StreamConnection> {
    while (!this.connections[index]) await new Promise((resolve) => this.waiters.push(resolve));
    return this.connections[index];
  }

  async stop(): Promise<void> {
    for (const client of this.wss.clients) client.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}

/** An HTTP app standing in for the calls service's webhooks, verifying signatures as it would. */
async function webhookApp(carrier: TwilioCarrier, streamUrl: string) {
  const received: Array<{ path: string; params: Record<string, string>; valid: boolean }> = [];
  const app = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const params = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString()));
      const valid = carrier.verifyWebhook({ url: `${base}${req.url ?? ''}`, headers: req.headers, params });
      received.push({ path: req.url ?? '', params, valid });
      if (!valid) return void res.writeHead(403, { 'content-type': 'text/plain' }).end('bad signature');
      if (req.url === '/carriers/twilio/voice') {
        const markup = carrier.answerInbound({ streamUrl, streamToken: `tok-${params['CallSid']}` });
        return void res.writeHead(200, { 'content-type': markup.contentType }).end(markup.body);
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
  return { app, base, received, close: () => new Promise<void>((resolve) => app.close(() => resolve())) };
}

function frames(count: number, seed = 0): Buffer {
  return Buffer.from(Array.from({ length: count * 160 }, (_, i) => (i * 7 + seed) & 0xff));
}

describe('FakeTwilioServer media streams', () => {
  let twilioServer: FakeTwilioServer;
  let streamServer: StreamServer;
  let carrier: TwilioCarrier;
  let streamUrl: string;

  beforeEach(async () => {
    twilioServer = new FakeTwilioServer();
    streamServer = new StreamServer();
    const apiBaseUrl = await twilioServer.start();
    streamUrl = await streamServer.start();
    carrier = new TwilioCarrier({ accountSid: FAKE_TWILIO_ACCOUNT_SID, authToken: FAKE_TWILIO_AUTH_TOKEN, apiBaseUrl });
  });

  afterEach(async () => {
    await twilioServer.stop();
    await streamServer.stop();
  });

  async function outboundCall(token = 'tok-1'): Promise<string> {
    const placed = await carrier.placeCall({
      to: '+15550001111',
      from: '+15550002222',
      streamUrl,
      streamToken: token,
      statusCallbackUrl: 'http://127.0.0.1:9/unused',
    });
    twilioServer.setCallStatus(placed.carrierCallId, 'in-progress');
    return placed.carrierCallId;
  }

  async function connect(token?: string): Promise<{ sid: string; stream: FakeMediaStream; server: StreamConnection }> {
    const sid = await outboundCall(token);
    const stream = await twilioServer.connectMediaStream(sid);
    const server = await streamServer.connection();
    await server.until(() => server.streamId);
    return { sid, stream, server };
  }

  it('opens the TwiML stream with a signed upgrade, then connected and start with the custom parameters', async () => {
    const token = 'a&b<"c">\'d';
    const { sid, stream, server } = await connect(token);

    expect(server.url).toBe('/media');
    expect(carrier.verifyWebhook({ url: streamUrl, headers: server.headers, params: {} })).toBe(true);
    expect(server.of('connected')).toHaveLength(1);
    expect(server.of('start')).toEqual([
      {
        type: 'start',
        streamId: stream.streamSid,
        carrierCallId: sid,
        parameters: { token },
        format: { encoding: 'mulaw', sampleRate: 8000, channels: 1 },
      },
    ]);
    expect(stream.streamSid).toMatch(/^MZ[0-9a-f]{32}$/);
    expect(server.raw[0]).toEqual({ event: 'connected', protocol: 'Call', version: '1.0.0' });
    expect(server.raw[1]).toEqual({
      event: 'start',
      sequenceNumber: '1',
      start: {
        accountSid: FAKE_TWILIO_ACCOUNT_SID,
        streamSid: stream.streamSid,
        callSid: sid,
        tracks: ['inbound'],
        customParameters: { token },
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
      streamSid: stream.streamSid,
    });
    expect(twilioServer.mediaStreams).toHaveLength(1);
    expect(twilioServer.mediaStreams[0]).toBe(stream);
  });

  it('sends caller audio in 160-byte frames stamped 20 ms apart, dtmf, then stop and a normal close', async () => {
    const { stream, server } = await connect();
    const audio = frames(5).subarray(0, 5 * 160 - 60); // a short last frame, padded with μ-law silence

    await stream.sendAudio(audio);
    const received = await server.until(() => server.of('audio').length === 5 && server.of('audio'));
    expect(received.map((a) => a.payload.length)).toEqual([160, 160, 160, 160, 160]);
    const t0 = received[0].timestampMs;
    expect(received.map((a) => a.timestampMs)).toEqual([t0, t0 + 20, t0 + 40, t0 + 60, t0 + 80]);
    expect(Buffer.concat(received.map((a) => a.payload))).toEqual(Buffer.concat([audio, Buffer.alloc(60, 0xff)]));
    const media = server.raw.filter((m) => m['event'] === 'media');
    expect(media.map((m) => (m['media'] as { chunk: string }).chunk)).toEqual(['1', '2', '3', '4', '5']);
    expect(media.map((m) => m['sequenceNumber'])).toEqual(['2', '3', '4', '5', '6']);
    expect(media.every((m) => (m['media'] as { track: string }).track === 'inbound')).toBe(true);

    await stream.sendAudio(frames(1));
    await server.until(() => server.of('audio').length === 6);
    expect(server.of('audio')[5].timestampMs).toBeGreaterThanOrEqual(t0 + 100);

    stream.sendDtmf('7');
    await server.until(() => server.of('dtmf').length === 1);
    expect(server.of('dtmf')).toEqual([{ type: 'dtmf', digit: '7' }]);
    expect(server.raw[server.raw.length - 1]).toEqual({
      event: 'dtmf',
      streamSid: stream.streamSid,
      sequenceNumber: '8',
      dtmf: { track: 'inbound_track', digit: '7' },
    });

    expect(await stream.stop()).toEqual({ code: 1000, reason: '' });
    expect((await server.closed).code).toBe(1000);
    expect(server.events[server.events.length - 1].event).toEqual({ type: 'stop' });
    expect(server.raw[server.raw.length - 1]).toMatchObject({
      event: 'stop',
      sequenceNumber: '9',
      stop: { accountSid: FAKE_TWILIO_ACCOUNT_SID, callSid: stream.callSid },
    });
  });

  it('paces audio in real time when asked', async () => {
    const { stream, server } = await connect();
    const began = performance.now();
    await stream.sendAudio(frames(6), { paced: true });
    // Six frames: the last goes out 100 ms after the first.
    expect(performance.now() - began).toBeGreaterThanOrEqual(90);
    await server.until(() => server.of('audio').length === 6);
  });

  it('echoes a mark once the audio sent before it has played', async () => {
    const { stream, server } = await connect();
    const audio = frames(20); // 400 ms
    const sentAt = performance.now();
    for (let i = 0; i < 20; i++) server.send(protocol.audio(server.streamId, audio.subarray(i * 160, (i + 1) * 160)));
    server.send(protocol.mark(server.streamId, 'm1'));

    const echoedAt = await server.markAt('m1');
    expect(echoedAt - sentAt).toBeGreaterThanOrEqual(395);
    expect(stream.marksEchoed).toEqual(['m1']);
    expect(stream.receivedFrames).toBe(20);
    expect(stream.receivedAudio()).toEqual(audio);
    expect(stream.playedAudio()).toEqual(audio);
    expect(server.raw[server.raw.length - 1]).toEqual({
      event: 'mark',
      sequenceNumber: expect.any(String),
      streamSid: stream.streamSid,
      mark: { name: 'm1' },
    });

    // Nothing queued: the mark comes straight back.
    server.send(protocol.mark(server.streamId, 'm2'));
    await server.markAt('m2');
    expect(stream.marksEchoed).toEqual(['m1', 'm2']);
    expect(stream.received.map((m) => m['event'])).toEqual([...Array(20).fill('media'), 'mark', 'mark']);
    expect(stream.problems).toEqual([]);
  });

  it('clear drops unplayed audio and sends pending marks back at once', async () => {
    const { stream, server } = await connect();
    const long = frames(250, 1); // 5 s
    server.send(protocol.audio(server.streamId, long));
    server.send(protocol.mark(server.streamId, 'a'));
    server.send(protocol.mark(server.streamId, 'b'));
    await stream.waitFor((m) => m['event'] === 'mark' && (m['mark'] as { name: string }).name === 'b');

    const clearedAt = performance.now();
    server.send(protocol.clear(server.streamId));
    await server.markAt('b');
    expect(performance.now() - clearedAt).toBeLessThan(3_000);
    expect(stream.marksEchoed).toEqual(['a', 'b']);
    expect(stream.clears).toBe(1);
    const played = stream.playedAudio();
    expect(played.length).toBeLessThan(long.length);
    expect(played).toEqual(long.subarray(0, played.length));

    // Playback restarts from now: new audio is not queued behind the cleared 2 s.
    const after = frames(5, 2); // 100 ms
    const sentAt = performance.now();
    server.send(protocol.audio(server.streamId, after));
    server.send(protocol.mark(server.streamId, 'c'));
    const echoedAt = await server.markAt('c');
    expect(echoedAt - sentAt).toBeGreaterThanOrEqual(95);
    expect(echoedAt - sentAt).toBeLessThan(3_000);
    expect(stream.playedAudio()).toEqual(Buffer.concat([played, after]));
    expect(stream.receivedAudio()).toEqual(Buffer.concat([long, after]));
  });

  it('notes what Twilio would refuse from the server', async () => {
    const { stream, server } = await connect();
    server.send('not json');
    server.send(JSON.stringify({ event: 'media', streamSid: 'MZother', media: { payload: 'AAAA' } }));
    server.send(JSON.stringify({ event: 'mark', streamSid: stream.streamSid, mark: {} }));
    server.send(JSON.stringify({ event: 'bogus', streamSid: stream.streamSid }));
    server.send(protocol.mark(server.streamId, 'last'));
    await server.markAt('last');
    expect(stream.problems).toEqual([
      'frame is not JSON: not json',
      'media for streamSid "MZother", not ' + stream.streamSid,
      'mark without a name',
      'unknown event "bogus"',
    ]);
    expect(stream.receivedFrames).toBe(0);
  });

  it('close() drops the connection without stop', async () => {
    const { stream, server } = await connect();
    expect((await stream.close()).code).toBe(1006);
    expect((await server.closed).code).toBe(1006);
    expect(server.of('stop')).toEqual([]);
    await expect(stream.waitFor(() => true, 1_000)).rejects.toThrow(/closed \(1006\)/);
    expect(() => stream.sendDtmf('1')).toThrow(/socket is closed/);
  });

  it('keeps the stream open after its call ended while told that Twilio’s stop is late', async () => {
    const first = await connect();
    twilioServer.streamsOutliveCalls = true;
    try {
      twilioServer.setCallStatus(first.sid, 'completed');
      expect(first.stream.open).toBe(true);
      expect(first.server.of('stop')).toHaveLength(0);
    } finally {
      twilioServer.streamsOutliveCalls = false;
    }
    await first.stream.stop();
  });

  it('stops the stream when the call ends or is redirected', async () => {
    const first = await connect();
    twilioServer.setCallStatus(first.sid, 'completed');
    expect((await first.stream.closed).code).toBe(1000);
    await first.server.until(() => first.server.of('stop').length === 1);

    const sid = await outboundCall();
    const stream = await twilioServer.connectMediaStream(sid);
    const server = await streamServer.connection(1);
    await carrier.transferCall(sid, '+15550003333');
    expect((await stream.closed).code).toBe(1000);
    await server.until(() => server.of('stop').length === 1);
    await expect(twilioServer.connectMediaStream(sid)).rejects.toThrow(/has no <Connect><Stream url>.*<Dial>/);
  });

  it('reports the server closing the stream', async () => {
    const { stream, server } = await connect();
    server.ws.close(4001, 'bad token');
    expect(await stream.closed).toEqual({ code: 4001, reason: 'bad token' });
    await expect(stream.waitFor(() => false, 1_000)).rejects.toThrow(/closed \(4001\)/);
    expect(() => stream.sendDtmf('1')).toThrow(/socket is closed/);
  });

  it('rejects without a <Connect><Stream>, on a refused upgrade and on a refused connection', async () => {
    const call = await carrier.client.calls.create({ to: '+15550001111', from: '+15550002222', twiml: '<Response><Say>hi</Say></Response>' });
    await expect(twilioServer.connectMediaStream(call.sid)).rejects.toThrow(/has no <Connect><Stream url>: <Response><Say>hi/);
    await expect(twilioServer.connectMediaStream('CAnope')).rejects.toThrow(/no call CAnope/);

    streamServer.refuse = { status: 403, body: 'unknown stream token' };
    const sid = await outboundCall();
    await expect(twilioServer.connectMediaStream(sid)).rejects.toThrow(/upgrade refused with HTTP 403 Forbidden: unknown stream token/);

    // Start the next server before stopping this one, so its port cannot be the one just freed.
    const refusing = streamServer;
    streamServer = new StreamServer(); // afterEach stops it
    await streamServer.start();
    await refusing.stop();
    await expect(twilioServer.connectMediaStream(sid)).rejects.toThrow(/\/media: connection failed: .*ECONNREFUSED/);
  });
});

describe('FakeTwilioServer inbound calls', () => {
  let twilioServer: FakeTwilioServer;
  let streamServer: StreamServer;
  let carrier: TwilioCarrier;
  let app: Awaited<ReturnType<typeof webhookApp>>;

  beforeEach(async () => {
    twilioServer = new FakeTwilioServer();
    streamServer = new StreamServer();
    const apiBaseUrl = await twilioServer.start();
    carrier = new TwilioCarrier({ accountSid: FAKE_TWILIO_ACCOUNT_SID, authToken: FAKE_TWILIO_AUTH_TOKEN, apiBaseUrl });
    app = await webhookApp(carrier, await streamServer.start());
  });

  afterEach(async () => {
    await twilioServer.stop();
    await streamServer.stop();
    await app.close();
  });

  it('posts a signed voice webhook, follows the TwiML answer to the stream, and sends status callbacks', async () => {
    const result = await twilioServer.placeInboundCall({
      voiceUrl: `${app.base}/carriers/twilio/voice`,
      from: '+15550001111',
      to: '+15550009999',
      statusCallbackUrl: `${app.base}/carriers/twilio/status`,
    });

    expect(result).toEqual({ sid: expect.stringMatching(/^CA[0-9a-f]{32}$/), status: 200, twiml: expect.stringContaining('<Connect><Stream'), contentType: 'text/xml' });
    const [webhook] = app.received;
    expect(webhook.valid).toBe(true);
    expect(webhook.params).toEqual({
      AccountSid: FAKE_TWILIO_ACCOUNT_SID,
      ApiVersion: '2010-04-01',
      CallSid: result.sid,
      CallStatus: 'ringing',
      Direction: 'inbound',
      From: '+15550001111',
      To: '+15550009999',
      Caller: '+15550001111',
      Called: '+15550009999',
    });
    expect(carrier.parseInbound(webhook.params)).toEqual({ carrierCallId: result.sid, from: '+15550001111', to: '+15550009999' });
    expect(twilioServer.callResources.get(result.sid)).toMatchObject({ direction: 'inbound', status: 'ringing', twiml: result.twiml });
    expect((await carrier.client.calls(result.sid).fetch()).direction).toBe('inbound');

    const stream = await twilioServer.connectMediaStream(result.sid);
    const server = await streamServer.connection();
    const start = await server.until(() => server.of('start')[0]);
    expect(start).toMatchObject({ carrierCallId: result.sid, streamId: stream.streamSid, parameters: { token: `tok-${result.sid}` } });

    twilioServer.setCallStatus(result.sid, 'in-progress');
    expect(await twilioServer.sendStatusCallback(result.sid, 'completed')).toBe(204);
    const status = app.received[1];
    expect(status).toMatchObject({ path: '/carriers/twilio/status', valid: true });
    expect(status.params).toMatchObject({ CallSid: result.sid, CallStatus: 'completed', Direction: 'inbound' });
    expect(carrier.parseStatusCallback(status.params)).toMatchObject({ carrierCallId: result.sid, status: 'completed' });
    await server.until(() => server.of('stop').length === 1);
  });

  it('sends a forged signature when told to, which the webhook refuses', async () => {
    const result = await twilioServer.placeInboundCall({
      voiceUrl: `${app.base}/carriers/twilio/voice`,
      from: '+15550001111',
      to: '+15550009999',
      signature: 'Zm9yZ2Vk',
    });
    expect(result).toMatchObject({ status: 403, twiml: 'bad signature', contentType: 'text/plain' });
    expect(app.received[0].valid).toBe(false);
    expect(twilioServer.callResources.get(result.sid)?.twiml).toBeUndefined();
    await expect(twilioServer.connectMediaStream(result.sid)).rejects.toThrow(/has no <Connect><Stream url>: \(none\)/);
    await expect(twilioServer.sendStatusCallback(result.sid, 'completed')).rejects.toThrow(/has no StatusCallback/);
  });
});

describe('parseConnectStreamTwiml', () => {
  it('reads the SDK TwiML and hand-written variants', () => {
    expect(
      parseConnectStreamTwiml(
        '<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="wss://m.test/s?a=1&amp;b=2"><Parameter name="token" value="x&quot;y"/><Parameter name="n" value="2"/></Stream></Connect></Response>',
      ),
    ).toEqual({ url: 'wss://m.test/s?a=1&b=2', parameters: { token: 'x"y', n: '2' } });
    expect(parseConnectStreamTwiml("<Response>\n  <Connect>\n    <Stream name='s' url='wss://m.test/x' />\n  </Connect>\n</Response>")).toEqual({
      url: 'wss://m.test/x',
      parameters: {},
    });
    expect(parseConnectStreamTwiml('<Response><Start><Stream url="wss://m.test/x"/></Start></Response>')).toBeUndefined();
    expect(parseConnectStreamTwiml('<Response><Connect><Stream name="no-url"/></Connect></Response>')).toBeUndefined();
  });
});
