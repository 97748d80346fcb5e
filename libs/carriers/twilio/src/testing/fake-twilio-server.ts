import { randomBytes } from 'node:crypto';
import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import twilio from 'twilio';
import { FakeMediaStream, parseConnectStreamTwiml } from './fake-media-stream';

/** A form-encoded body as received: repeated fields (e.g. StatusCallbackEvent) become arrays. */
export type FakeTwilioForm = Record<string, string | string[]>;

/** Twilio's call statuses (the REST API's spelling). */
export type TwilioCallStatus =
  | 'queued'
  | 'initiated'
  | 'ringing'
  | 'in-progress'
  | 'completed'
  | 'busy'
  | 'no-answer'
  | 'failed'
  | 'canceled';

/** One request to the Calls API the server received. */
export interface FakeTwilioCallRequest {
  /** `create` (POST …/Calls.json), `update` (POST …/Calls/{Sid}.json) or `fetch` (GET …/Calls/{Sid}.json). */
  action: 'create' | 'update' | 'fetch';
  method: string;
  /** Path and query, e.g. `/2010-04-01/Accounts/AC…/Calls.json`. */
  path: string;
  /** The account sid in the path. */
  accountSid: string;
  /** Header names in lower case. */
  headers: IncomingHttpHeaders;
  /** Basic-auth user and password as sent (undefined without an Authorization header). */
  auth: { username: string; password: string } | undefined;
  /** Whether the credentials were accepted. */
  authorized: boolean;
  /** The parsed form body (`To`, `From`, `Twiml`, `StatusCallback`, …). */
  form: FakeTwilioForm;
  /** The form's `Twiml`, when there was one. */
  twiml: string | undefined;
  /** The call the request was about (the created one for `create`, when created). */
  callSid: string | undefined;
  /** HTTP status answered. */
  status: number;
}

/** A call the fake knows (as its Call resource fields, snake_case like the API). */
export interface FakeTwilioCall {
  sid: string;
  account_sid: string;
  to: string;
  from: string;
  status: TwilioCallStatus;
  direction: 'outbound-api' | 'inbound';
  /** Form of the create request (StatusCallback, MachineDetection, Timeout, …); empty for inbound calls. */
  createForm: FakeTwilioForm;
  /** Where status callbacks go: the create's StatusCallback, or the number's for an inbound call. */
  statusCallbackUrl: string | undefined;
  /** TwiML the call currently runs (the create's, then each update's). */
  twiml: string | undefined;
  date_created: Date;
  date_updated: Date;
  start_time: Date | undefined;
  end_time: Date | undefined;
}

/** A raw answer to force on the next Calls API request (after authentication). */
export interface FakeTwilioFailure {
  status: number;
  code?: number;
  message?: string;
}

export interface FakeTwilioServerOptions {
  /** The account the server serves. Default a fixed `AC…` sid. */
  accountSid?: string;
  /** The account's auth token. Default a fixed token. */
  authToken?: string;
}

export interface FakeInboundCallOptions {
  /** The number's voice webhook (A CALL COMES IN), posted to like Twilio does. */
  voiceUrl: string;
  /** Caller, E.164. */
  from: string;
  /** The called Twilio number, E.164. */
  to: string;
  /** The number's status callback URL, for `sendStatusCallback`. */
  statusCallbackUrl?: string;
  /** An `X-Twilio-Signature` to send instead of the right one (a forged webhook). */
  signature?: string;
}

export interface FakeInboundCallResult {
  sid: string;
  /** HTTP status of the webhook's answer. */
  status: number;
  /** The answer's body (the TwiML, when it succeeded). */
  twiml: string;
  contentType: string;
}

export interface ConnectMediaStreamOptions {
  /** Tracks announced in `start`. Default `['inbound']` (all a `<Connect><Stream>` has). */
  tracks?: string[];
  /** WebSocket handshake timeout. Default 10 s. */
  timeoutMs?: number;
}

export const FAKE_TWILIO_ACCOUNT_SID = 'AC00000000000000000000000000000001';
export const FAKE_TWILIO_AUTH_TOKEN = 'fake-twilio-auth-token-0000000001';

const API = '/2010-04-01';

/**
 * A real HTTP server on 127.0.0.1 (random port) speaking enough of Twilio's REST API (2010-04-01 Calls) for the
 * `twilio` SDK end to end: create, update and fetch calls, HTTP Basic auth with the account sid and auth token
 * (wrong credentials get Twilio's 401 error 20003), form-encoded bodies, JSON Call resources, Twilio's error
 * shape (`code`, `message`, `more_info`, `status`). Every Calls API request is recorded in `calls`.
 * Call state only changes when told to (`setCallStatus`); status callbacks are built with
 * `statusCallbackParams` and can be posted, signed, to the call's StatusCallback with `sendStatusCallback`.
 * Inbound calls are offered to a voice webhook with `placeInboundCall`. `connectMediaStream` plays Twilio's side
 * of the call's `<Connect><Stream>` over a real WebSocket; such streams get `stop` when their call ends or is
 * redirected, as on Twilio.
 */
export class FakeTwilioServer {
  readonly accountSid: string;
  readonly authToken: string;
  /** Every Calls API request received, in order (refused ones included). */
  readonly calls: FakeTwilioCallRequest[] = [];
  /** Calls by sid. */
  readonly callResources = new Map<string, FakeTwilioCall>();
  /** Every media stream opened, in order. */
  readonly mediaStreams: FakeMediaStream[] = [];
  /**
   * Set: a call's streams stay open after it ended, as if Twilio's `stop` were late, so a test sees who else
   * closes them (the media worker on a command, or on a heartbeat's answer).
   */
  streamsOutliveCalls = false;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly failures: FakeTwilioFailure[] = [];
  private readonly sequence = new Map<string, number>();
  private base: string | undefined;

  constructor(options: FakeTwilioServerOptions = {}) {
    this.accountSid = options.accountSid ?? FAKE_TWILIO_ACCOUNT_SID;
    this.authToken = options.authToken ?? FAKE_TWILIO_AUTH_TOKEN;
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) sendJson(res, 500, twilioError(500, 20500, `fake server failure: ${String(error)}`));
        else res.destroy();
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** Starts listening; resolves to the base URL to give the adapter, e.g. `http://127.0.0.1:40123`. */
  async start(): Promise<string> {
    if (this.base) return this.base;
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const { port } = this.server.address() as AddressInfo;
    this.base = `http://127.0.0.1:${port}`;
    return this.base;
  }

  /**
   * Starts listening; resolves to the environment that points the platform's Twilio adapter at this server (account,
   * token, REST base URL, caller id), for a test to spread into the platform's env.
   */
  async platformEnv(fromNumber = '+15550009999'): Promise<Record<string, string>> {
    return {
      TWILIO_ACCOUNT_SID: this.accountSid,
      TWILIO_AUTH_TOKEN: this.authToken,
      TWILIO_API_BASE_URL: await this.start(),
      TWILIO_FROM_NUMBER: fromNumber,
    };
  }

  /** The base URL (after `start()`). */
  get baseUrl(): string {
    if (!this.base) throw new Error('FakeTwilioServer: not started');
    return this.base;
  }

  /** Stops the server, cutting open connections. */
  async stop(): Promise<void> {
    if (!this.base) return;
    this.base = undefined;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(this.mediaStreams.map((stream) => stream.close()));
    await closed;
  }

  /** The last Calls API request. */
  get lastCall(): FakeTwilioCallRequest | undefined {
    return this.calls[this.calls.length - 1];
  }

  /** Makes the next authenticated Calls API request fail with this status and Twilio error. */
  failNext(failure: FakeTwilioFailure): this {
    this.failures.push(failure);
    return this;
  }

  /** Moves a call to a status (as the network would), e.g. `in-progress` once answered. */
  setCallStatus(sid: string, status: TwilioCallStatus): FakeTwilioCall {
    const call = this.callResources.get(sid);
    if (!call) throw new Error(`FakeTwilioServer: no call ${sid}`);
    const now = new Date();
    if (status === 'in-progress' && !call.start_time) call.start_time = now;
    if (isOver(status) && !call.end_time) call.end_time = now;
    call.status = status;
    call.date_updated = now;
    if (isOver(status) && !this.streamsOutliveCalls) this.endMediaStreams(sid);
    return call;
  }

  /**
   * Offers an inbound call: creates the call (direction `inbound`, status `ringing`) and posts Twilio's voice
   * webhook form to `voiceUrl`, signed with the auth token (or with `signature`). A 2xx answer's body becomes the
   * call's TwiML, so `connectMediaStream` can follow it.
   */
  async placeInboundCall(options: FakeInboundCallOptions): Promise<FakeInboundCallResult> {
    const now = new Date();
    const call: FakeTwilioCall = {
      sid: newCallSid(),
      account_sid: this.accountSid,
      to: options.to,
      from: options.from,
      status: 'ringing',
      direction: 'inbound',
      createForm: {},
      statusCallbackUrl: options.statusCallbackUrl,
      twiml: undefined,
      date_created: now,
      date_updated: now,
      start_time: undefined,
      end_time: undefined,
    };
    this.callResources.set(call.sid, call);
    const params: Record<string, string> = {
      AccountSid: this.accountSid,
      ApiVersion: '2010-04-01',
      CallSid: call.sid,
      CallStatus: 'ringing',
      Direction: 'inbound',
      From: options.from,
      To: options.to,
      Caller: options.from,
      Called: options.to,
    };
    const signed = signedTwilioWebhook(options.voiceUrl, params, this.authToken);
    const signature = options.signature ?? signed.headers['x-twilio-signature'];
    const res = await fetch(options.voiceUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
      body: signed.body,
    });
    const body = await res.text();
    if (res.ok) call.twiml = body;
    return { sid: call.sid, status: res.status, twiml: body, contentType: res.headers.get('content-type') ?? '' };
  }

  /**
   * Plays Twilio's side of the call's `<Connect><Stream>`: opens a WebSocket to its url (with a signed
   * `X-Twilio-Signature` as Twilio sends), sends `connected` and `start` (custom parameters from the
   * `<Parameter>`s). Rejects when the call's TwiML has no stream, or the upgrade is refused or fails.
   */
  async connectMediaStream(sid: string, options: ConnectMediaStreamOptions = {}): Promise<FakeMediaStream> {
    const call = this.callResources.get(sid);
    if (!call) throw new Error(`FakeTwilioServer: no call ${sid}`);
    if (isOver(call.status)) throw new Error(`FakeTwilioServer: call ${sid} is ${call.status}, no TwiML runs`);
    const stream = call.twiml !== undefined ? parseConnectStreamTwiml(call.twiml) : undefined;
    if (!stream) {
      throw new Error(`FakeTwilioServer: call ${sid} TwiML has no <Connect><Stream url>: ${call.twiml ?? '(none)'}`);
    }
    const media = await FakeMediaStream.connect({
      url: stream.url,
      accountSid: this.accountSid,
      callSid: sid,
      authToken: this.authToken,
      parameters: stream.parameters,
      ...(options.tracks ? { tracks: options.tracks } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    });
    this.mediaStreams.push(media);
    return media;
  }

  // Twilio ends a call's stream with `stop` when the call ends or leaves its <Connect> (redirect).
  private endMediaStreams(sid: string): void {
    for (const stream of this.mediaStreams) {
      if (stream.callSid === sid && stream.open) void stream.stop();
    }
  }

  /**
   * The form fields Twilio posts to a call's StatusCallback for a status, e.g. `{ CallSid, CallStatus,
   * CallDuration, AnsweredBy, Timestamp, … }` (CallDuration on completed calls; AnsweredBy when given).
   */
  statusCallbackParams(
    sid: string,
    status: TwilioCallStatus,
    extra: { callDuration?: number; answeredBy?: string; at?: Date; sequenceNumber?: number } = {},
  ): Record<string, string> {
    const call = this.callResources.get(sid);
    const seq = extra.sequenceNumber ?? this.sequence.get(sid) ?? 0;
    this.sequence.set(sid, seq + 1);
    const params: Record<string, string> = {
      AccountSid: this.accountSid,
      ApiVersion: '2010-04-01',
      CallSid: sid,
      CallStatus: status,
      CallbackSource: 'call-progress-events',
      Direction: call?.direction ?? 'outbound-api',
      From: call?.from ?? '',
      To: call?.to ?? '',
      SequenceNumber: String(seq),
      Timestamp: (extra.at ?? new Date()).toUTCString().replace('GMT', '+0000'),
    };
    if (extra.callDuration !== undefined) params['CallDuration'] = String(extra.callDuration);
    else if (status === 'completed') params['CallDuration'] = String(durationOf(call));
    if (extra.answeredBy) params['AnsweredBy'] = extra.answeredBy;
    return params;
  }

  /**
   * Moves the call to `status` and posts the status callback, signed with the auth token, to the call's
   * StatusCallback URL (as Twilio would). Resolves to the callback's HTTP status.
   */
  async sendStatusCallback(
    sid: string,
    status: TwilioCallStatus,
    extra: { callDuration?: number; answeredBy?: string; at?: Date } = {},
  ): Promise<number> {
    const call = this.setCallStatus(sid, status);
    const url = call.statusCallbackUrl;
    if (!url) throw new Error(`FakeTwilioServer: call ${sid} has no StatusCallback`);
    const signed = signedTwilioWebhook(url, this.statusCallbackParams(sid, status, extra), this.authToken);
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...signed.headers },
      body: signed.body,
    });
    await res.arrayBuffer();
    return res.status;
  }

  /**
   * Posts the asynchronous answering-machine verdict (`AnsweredBy`: human, machine_start, machine_end_beep, fax,
   * unknown) to the call's AsyncAmdStatusCallback, signed as Twilio signs. Resolves to the HTTP status.
   */
  async sendMachineDetection(sid: string, answeredBy: string): Promise<number> {
    const call = this.callResources.get(sid);
    const url = call ? single(call.createForm['AsyncAmdStatusCallback']) : undefined;
    if (!url) throw new Error(`FakeTwilioServer: call ${sid} asked for no asynchronous machine detection`);
    const params = { AccountSid: this.accountSid, CallSid: sid, AnsweredBy: answeredBy, MachineDetectionDuration: '2500' };
    const signed = signedTwilioWebhook(url, params, this.authToken);
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...signed.headers }, body: signed.body });
    await res.arrayBuffer();
    return res.status;
  }

  /**
   * The transfer's other leg is over with `dialCallStatus` (completed, no-answer, busy, failed, canceled): posts
   * the `<Dial action>` request of the call's current TwiML, signed, and runs the TwiML answered (a new
   * `<Connect><Stream>` then works with connectMediaStream). Resolves to the HTTP status and the TwiML.
   */
  async sendDialResult(sid: string, dialCallStatus: string): Promise<{ status: number; twiml: string }> {
    const call = this.callResources.get(sid);
    const action = call?.twiml ? /<Dial[^>]*\saction="([^"]+)"/.exec(call.twiml)?.[1]?.replace(/&amp;/g, '&') : undefined;
    if (!call || !action) throw new Error(`FakeTwilioServer: call ${sid} runs no <Dial action>`);
    const params = { AccountSid: this.accountSid, CallSid: sid, CallStatus: 'in-progress', DialCallStatus: dialCallStatus, Direction: call.direction };
    const signed = signedTwilioWebhook(action, params, this.authToken);
    const res = await fetch(action, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...signed.headers }, body: signed.body });
    const twiml = await res.text();
    if (res.ok) {
      call.twiml = twiml;
      call.date_updated = new Date();
    }
    return { status: res.status, twiml };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    const route = path.split('?')[0];
    const match = /^\/2010-04-01\/Accounts\/([^/]+)\/Calls(?:\/([^/]+))?\.json$/.exec(route);
    if (!match || !(method === 'POST' || (method === 'GET' && match[2]))) {
      return sendJson(res, 404, notFound(route));
    }
    const [, accountSid, callSid] = match;
    const action: FakeTwilioCallRequest['action'] = !callSid ? 'create' : method === 'GET' ? 'fetch' : 'update';
    const form = parseForm(raw, req.headers['content-type']);
    const auth = parseBasicAuth(req.headers.authorization);
    const authorized =
      !!auth && auth.username === this.accountSid && auth.password === this.authToken && accountSid === this.accountSid;
    const record: FakeTwilioCallRequest = {
      action,
      method,
      path,
      accountSid,
      headers: req.headers,
      auth,
      authorized,
      form,
      twiml: typeof form['Twiml'] === 'string' ? form['Twiml'] : undefined,
      callSid,
      status: 0,
    };
    this.calls.push(record);
    const answer = (status: number, body: unknown) => {
      record.status = status;
      sendJson(res, status, body, status === 401 ? { 'www-authenticate': 'Basic realm="Twilio API"' } : {});
    };

    if (!authorized) return answer(401, twilioError(401, 20003, 'Authenticate', 'Your AccountSid or AuthToken was incorrect.'));
    const failure = this.failures.shift();
    if (failure) return answer(failure.status, twilioError(failure.status, failure.code ?? 20500, failure.message ?? 'Scripted failure'));

    if (action === 'create') {
      const to = single(form['To']);
      const from = single(form['From']);
      if (!to) return answer(400, twilioError(400, 21201, "No 'To' number is specified"));
      if (!from) return answer(400, twilioError(400, 21603, "A 'From' phone number is required."));
      if (!single(form['Twiml']) && !single(form['Url']) && !single(form['ApplicationSid'])) {
        return answer(400, twilioError(400, 21205, 'Url parameter is required.'));
      }
      const now = new Date();
      const call: FakeTwilioCall = {
        sid: newCallSid(),
        account_sid: this.accountSid,
        to,
        from,
        status: 'queued',
        direction: 'outbound-api',
        createForm: form,
        statusCallbackUrl: single(form['StatusCallback']),
        twiml: single(form['Twiml']),
        date_created: now,
        date_updated: now,
        start_time: undefined,
        end_time: undefined,
      };
      this.callResources.set(call.sid, call);
      record.callSid = call.sid;
      return answer(201, callResource(call));
    }

    const call = this.callResources.get(callSid);
    if (!call) return answer(404, notFound(route));
    if (action === 'fetch') return answer(200, callResource(call));

    const status = single(form['Status']);
    const twiml = single(form['Twiml']);
    if (status !== undefined) {
      if (status !== 'completed' && status !== 'canceled') {
        return answer(400, twilioError(400, 21218, `Invalid value for Status: ${status}`));
      }
      if (!isOver(call.status)) {
        // Twilio: `canceled` only ends calls not yet answered; `completed` ends any call.
        if (status === 'completed' || call.status === 'queued' || call.status === 'ringing') {
          this.setCallStatus(call.sid, status === 'canceled' ? 'canceled' : 'completed');
        }
      }
      return answer(200, callResource(call));
    }
    if (twiml !== undefined || single(form['Url']) !== undefined) {
      if (isOver(call.status)) return answer(400, twilioError(400, 21220, 'Call is not in-progress. Cannot redirect.'));
      call.twiml = twiml;
      call.date_updated = new Date();
      this.endMediaStreams(call.sid);
      return answer(200, callResource(call));
    }
    return answer(200, callResource(call));
  }
}

/** What `signedTwilioWebhook` gives: the webhook as a CarrierAdapter sees it, and the body to post. */
export interface SignedTwilioWebhook {
  url: string;
  params: Record<string, string>;
  /** `{ 'x-twilio-signature': … }`. */
  headers: Record<string, string>;
  /** The params form-encoded, to post with `content-type: application/x-www-form-urlencoded`. */
  body: string;
}

/**
 * A Twilio webhook to `url` with `params`, signed with `authToken` as Twilio signs (the SDK's
 * getExpectedTwilioSignature: HMAC-SHA1 over the URL and sorted params), so verifyWebhook accepts it.
 */
export function signedTwilioWebhook(url: string, params: Record<string, string>, authToken: string): SignedTwilioWebhook {
  const signature = twilio.getExpectedTwilioSignature(authToken, url, params);
  return {
    url,
    params: { ...params },
    headers: { 'x-twilio-signature': signature },
    body: new URLSearchParams(params).toString(),
  };
}

function newCallSid(): string {
  return `CA${randomBytes(16).toString('hex')}`;
}

function callResource(call: FakeTwilioCall) {
  const uri = `${API}/Accounts/${call.account_sid}/Calls/${call.sid}.json`;
  return {
    sid: call.sid,
    account_sid: call.account_sid,
    parent_call_sid: null,
    date_created: rfc2822(call.date_created),
    date_updated: rfc2822(call.date_updated),
    to: call.to,
    to_formatted: call.to,
    from: call.from,
    from_formatted: call.from,
    phone_number_sid: null,
    status: call.status,
    start_time: call.start_time ? rfc2822(call.start_time) : null,
    end_time: call.end_time ? rfc2822(call.end_time) : null,
    duration: call.end_time ? String(durationOf(call)) : null,
    price: null,
    price_unit: 'USD',
    direction: call.direction,
    answered_by: null,
    api_version: '2010-04-01',
    forwarded_from: null,
    group_sid: null,
    caller_name: null,
    queue_time: '0',
    trunk_sid: null,
    uri,
    subresource_uris: {
      notifications: uri.replace('.json', '/Notifications.json'),
      recordings: uri.replace('.json', '/Recordings.json'),
      payments: uri.replace('.json', '/Payments.json'),
      events: uri.replace('.json', '/Events.json'),
      siprec: uri.replace('.json', '/Siprec.json'),
      streams: uri.replace('.json', '/Streams.json'),
      transcriptions: uri.replace('.json', '/Transcriptions.json'),
      user_defined_message_subscriptions: uri.replace('.json', '/UserDefinedMessageSubscriptions.json'),
      user_defined_messages: uri.replace('.json', '/UserDefinedMessages.json'),
    },
  };
}

function durationOf(call: FakeTwilioCall | undefined): number {
  if (!call?.start_time) return 0;
  return Math.max(0, Math.round(((call.end_time ?? new Date()).getTime() - call.start_time.getTime()) / 1000));
}

function isOver(status: TwilioCallStatus): boolean {
  return ['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(status);
}

function rfc2822(date: Date): string {
  return date.toUTCString().replace('GMT', '+0000');
}

function twilioError(status: number, code: number, message: string, detail?: string) {
  return {
    code,
    message,
    ...(detail ? { detail } : {}),
    more_info: `https://www.twilio.com/docs/errors/${code}`,
    status,
  };
}

function notFound(route: string) {
  return twilioError(404, 20404, `The requested resource ${route} was not found`);
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function parseForm(raw: string, contentType: string | undefined): FakeTwilioForm {
  const form: FakeTwilioForm = {};
  if (!raw || (contentType && !contentType.startsWith('application/x-www-form-urlencoded'))) return form;
  for (const [key, value] of new URLSearchParams(raw)) {
    const existing = form[key];
    if (existing === undefined) form[key] = value;
    else form[key] = Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  return form;
}

function parseBasicAuth(header: string | undefined): { username: string; password: string } | undefined {
  const match = header ? /^Basic\s+(.+)$/i.exec(header) : null;
  if (!match) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
