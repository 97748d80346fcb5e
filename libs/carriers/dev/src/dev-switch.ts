import { randomBytes } from 'node:crypto';
import { IncomingMessage } from 'node:http';
import { Duplex } from 'node:stream';
import { CarrierCallStatus, isE164, isSipUri, isTerminalCarrierCallStatus } from '@parley/carrier-core';
import WebSocket, { WebSocketServer } from 'ws';
import { devPhonePage } from './dev-phone-page';
import {
  DEV_CARRIER_NAME,
  DEV_CARRIER_NUMBER,
  DEV_FIELDS,
  DEV_PHONE_NUMBER,
  DEV_PHONE_PATH,
  DEV_PHONE_SOCKET_PATH,
  DEV_SIGNATURE_HEADER,
  DEV_SWITCH_API_PATH,
  DevCallResource,
  devCarrierKeys,
  DevMarkup,
  DevPlaceCallBody,
  DevTransferBody,
  sameSecret,
  signDevWebhook,
} from './dev-wire';

/** A call as a dev phone page sees it. */
export interface DevPhoneCall {
  id: string;
  /** `outbound`: Parley calls the page; `inbound`: the page called an agent. */
  direction: 'outbound' | 'inbound';
  to: string;
  from: string;
  agent_id: string | null;
}

/** Switch → page, JSON text frames on `/dev/phone/socket`. */
export type DevPhoneServerMessage =
  /** On connect: the page's default number and every call ringing now. */
  | { type: 'hello'; number: string; carrier_number: string; ringing: DevPhoneCall[] }
  | { type: 'ring'; call: DevPhoneCall }
  /** The call no longer rings here: another page answered, Parley hung up, it rang out, or a page declined. */
  | { type: 'ring-stop'; call_id: string; reason: 'answered_elsewhere' | 'canceled' | 'no_answer' | 'declined' }
  /** The page's own call to an agent is being put through. */
  | { type: 'dialing'; call: DevPhoneCall }
  /** The leg is this page's: open the media stream (the realtime protocol, `start.token` = stream_token). */
  | { type: 'connected'; call_id: string; stream_url: string; stream_token: string }
  | { type: 'transferring'; call_id: string; destination: string }
  /** The leg is over for this page; close its media stream. */
  | { type: 'ended'; call_id: string; reason: 'hangup' | 'remote_hangup' | 'transferred' | 'rejected'; destination?: string; message?: string }
  | { type: 'error'; message: string; call_id?: string };

/** Page → switch. DTMF is not here: the keypad's digits travel on the media stream, as a phone's tones do. */
export type DevPhoneClientMessage =
  | { type: 'answer'; call_id: string; as?: 'human' | 'machine' }
  | { type: 'decline'; call_id: string }
  | { type: 'hangup'; call_id: string }
  | { type: 'dial'; agent_id: string; from?: string };

export interface DevSwitchLog {
  warn(details: Record<string, unknown>, message: string): void;
}

export interface DevSwitchOptions {
  /** The deployment's SECRET_KEY (the REST API key and the webhook key are derived from it). */
  secret: string;
  /** The gateway's public base URL (PUBLIC_URL): a page's calls to agents are posted to its `/carriers/dev/…` routes. */
  publicUrl: string;
  /**
   * The base URL of the gateway hosting the switch, as this process reaches it (its own listening address), when
   * known: webhooks to URLs under `publicUrl` are delivered there, still signed over their PUBLIC_URL form (which is
   * what the gateway checks), so they never leave the machine and a PUBLIC_URL it cannot reach does not matter.
   */
  deliverTo?: () => string | undefined;
  /** Ring time of a call that names none. Default 30 s. */
  defaultRingSeconds?: number;
  /** Time from the answer to the machine-detection verdict (carriers listen 2-4 s before judging). Default 2 s. */
  machineDetectionDelayMs?: number;
  /** Time a transfer takes to reach the other party, during which the page shows "transferring". Default 1 s. */
  transferConnectMs?: number;
  /** Timeout of each webhook the switch posts. Default 10 s. */
  webhookTimeoutMs?: number;
  /** Ended calls kept for look-ups (the reconciler asks about calls whose callback was missed). Default 500. */
  keepEndedCalls?: number;
  log?: DevSwitchLog;
}

export interface DevSwitchHttpRequest {
  method: string;
  /** Path and query, e.g. `/dev/switch/calls`. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body, if any. */
  body?: unknown;
}

export interface DevSwitchHttpResponse {
  status: number;
  contentType: string;
  body: string;
}

interface SwitchCall {
  id: string;
  direction: 'outbound' | 'inbound';
  to: string;
  from: string;
  agentId: string | null;
  status: CarrierCallStatus;
  streamUrl: string;
  streamToken: string;
  statusCallbackUrl: string;
  machineDetectionUrl: string | undefined;
  ringSeconds: number;
  /** The page holding the leg (answered it, or placed it). */
  page: WebSocket | undefined;
  answeredAt: number | undefined;
  endedAt: number | undefined;
  answeredBy: 'human' | 'machine' | null;
  updatedAt: number;
  timers: Set<NodeJS.Timeout>;
  /** Webhooks of one call go out one after another, in the order things happened. */
  webhooks: Promise<void>;
}

type ApiError = { status: number; message: string };

const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The dev carrier's "network", hosted by the gateway: the dev phone page (`GET /dev/phone`), the socket its pages
 * keep open (`/dev/phone/socket`), and the REST API DevCarrier drives (`/dev/switch/calls…`, bearer key derived
 * from SECRET_KEY). A placed call rings every open page until one answers (the others stop ringing), one declines
 * (`busy`), or its ring time passes (`no_answer`); the switch reports each change to the call's status callback,
 * signed, as a carrier does, and hands the answering page the call's media stream URL and token. A page can also
 * call an agent: the switch posts the inbound-call webhook to the gateway and connects the page to the stream the
 * markup names. State lives in this process: one switch per deployment (one gateway replica).
 */
export class DevSwitch {
  private readonly apiKey: string;
  private readonly webhookKey: Buffer;
  private readonly publicUrl: string;
  private readonly defaultRingSeconds: number;
  private readonly machineDetectionDelayMs: number;
  private readonly transferConnectMs: number;
  private readonly webhookTimeoutMs: number;
  private readonly keepEndedCalls: number;
  private readonly log: DevSwitchLog | undefined;
  private readonly deliverTo: (() => string | undefined) | undefined;
  private readonly sockets = new WebSocketServer({ noServer: true });
  private readonly pages = new Set<WebSocket>();
  private readonly calls = new Map<string, SwitchCall>();
  private closed = false;

  constructor(options: DevSwitchOptions) {
    const keys = devCarrierKeys(options.secret);
    this.apiKey = keys.apiKey;
    this.webhookKey = keys.webhookKey;
    this.publicUrl = options.publicUrl.replace(/\/+$/, '');
    this.defaultRingSeconds = options.defaultRingSeconds ?? 30;
    this.machineDetectionDelayMs = options.machineDetectionDelayMs ?? 2000;
    this.transferConnectMs = options.transferConnectMs ?? 1000;
    this.webhookTimeoutMs = options.webhookTimeoutMs ?? 10_000;
    this.keepEndedCalls = options.keepEndedCalls ?? 500;
    this.log = options.log;
    this.deliverTo = options.deliverTo;
  }

  /** Pages connected now. */
  get pageCount(): number {
    return this.pages.size;
  }

  /** Serves the page and the REST API; any other path is 404. */
  async handleHttp(req: DevSwitchHttpRequest): Promise<DevSwitchHttpResponse> {
    const path = req.url.split('?')[0].replace(/\/+$/, '');
    if (path === DEV_PHONE_PATH && req.method === 'GET') return { status: 200, contentType: 'text/html; charset=utf-8', body: devPhonePage() };
    if (!path.startsWith(`${DEV_SWITCH_API_PATH}/`)) return apiError({ status: 404, message: 'not found' });
    const auth = req.headers['authorization'];
    if (typeof auth !== 'string' || !sameSecret(auth, `Bearer ${this.apiKey}`)) {
      return apiError({ status: 401, message: 'the dev switch takes the bearer key derived from SECRET_KEY' });
    }
    const route = path.slice(DEV_SWITCH_API_PATH.length);
    const match = /^\/calls(?:\/([^/]+)(?:\/(end|transfer))?)?$/.exec(route);
    if (!match) return apiError({ status: 404, message: 'not found' });
    const [, id, action] = match;
    const body = (req.body ?? {}) as Record<string, unknown>;
    let answer: SwitchCall | ApiError;
    if (!id && req.method === 'POST') answer = this.placeCall(body as unknown as DevPlaceCallBody);
    else if (id && !action && req.method === 'GET') answer = this.callOr404(decodeURIComponent(id));
    else if (id && action === 'end' && req.method === 'POST') answer = this.endCall(decodeURIComponent(id));
    else if (id && action === 'transfer' && req.method === 'POST') answer = this.transferCall(decodeURIComponent(id), body as unknown as DevTransferBody);
    else return apiError({ status: 405, message: `${req.method} is not allowed here` });
    if ('message' in answer) return apiError(answer);
    return { status: !id ? 201 : 200, contentType: 'application/json', body: JSON.stringify(resource(answer)) };
  }

  /** Takes the upgrade when it is for the page socket (true); anything else is left to the caller (false). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    if ((req.url ?? '').split('?')[0].replace(/\/+$/, '') !== DEV_PHONE_SOCKET_PATH) return false;
    // Only the page this gateway served may drive the switch, not any site the developer happens to visit.
    const origin = req.headers.origin;
    if (this.closed || (origin !== undefined && hostOf(origin) !== req.headers.host)) {
      socket.end(`HTTP/1.1 ${this.closed ? '503 Service Unavailable' : '403 Forbidden'}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return true;
    }
    this.sockets.handleUpgrade(req, socket, head, (page) => this.connect(page));
    return true;
  }

  /** Closes every page and drops every timer; calls still live get no more webhooks (the leg is gone). */
  async close(): Promise<void> {
    this.closed = true;
    for (const call of this.calls.values()) this.clearTimers(call);
    for (const page of this.pages) page.close(1001, 'the dev switch is stopping');
    await new Promise<void>((resolve) => this.sockets.close(() => resolve()));
    for (const page of this.pages) page.terminate();
  }

  private connect(page: WebSocket): void {
    this.pages.add(page);
    const ringing = [...this.calls.values()].filter((c) => c.direction === 'outbound' && c.status === 'ringing').map(phoneCall);
    send(page, { type: 'hello', number: DEV_PHONE_NUMBER, carrier_number: DEV_CARRIER_NUMBER, ringing });
    page.on('message', (data, isBinary) => {
      let message: DevPhoneClientMessage;
      try {
        if (isBinary) throw new Error('binary');
        message = JSON.parse(String(data)) as DevPhoneClientMessage;
      } catch {
        send(page, { type: 'error', message: 'frames are JSON text' });
        return;
      }
      this.onPageMessage(page, message);
    });
    page.on('close', () => {
      this.pages.delete(page);
      // A page that goes away hangs up the calls it holds, as a phone switched off mid-call does.
      for (const call of this.calls.values()) if (call.page === page && !isTerminalCarrierCallStatus(call.status)) this.hangUp(call);
    });
    page.on('error', () => page.terminate());
  }

  private onPageMessage(page: WebSocket, message: DevPhoneClientMessage): void {
    if (message?.type === 'dial') {
      void this.dial(page, message);
      return;
    }
    const call = typeof message?.call_id === 'string' ? this.calls.get(message.call_id) : undefined;
    if (!call) {
      send(page, { type: 'error', message: 'no such call', ...(typeof message?.call_id === 'string' ? { call_id: message.call_id } : {}) });
      return;
    }
    switch (message.type) {
      case 'answer':
        return this.answer(page, call, message.as === 'machine' ? 'machine' : 'human');
      case 'decline':
        if (call.direction !== 'outbound' || call.status !== 'ringing') return send(page, { type: 'error', call_id: call.id, message: 'the call is not ringing' });
        this.broadcast({ type: 'ring-stop', call_id: call.id, reason: 'declined' });
        return this.finish(call, 'busy');
      case 'hangup':
        if (call.page !== page || isTerminalCarrierCallStatus(call.status)) return send(page, { type: 'error', call_id: call.id, message: 'the call is not on this phone' });
        send(page, { type: 'ended', call_id: call.id, reason: 'hangup' });
        return this.hangUp(call);
      default:
        send(page, { type: 'error', message: `unknown message type ${JSON.stringify((message as { type?: unknown }).type)}` });
    }
  }

  // Outbound: Parley → the pages.

  private placeCall(body: DevPlaceCallBody): SwitchCall | ApiError {
    const problems = [
      typeof body.to === 'string' && body.to ? undefined : 'to',
      typeof body.from === 'string' && body.from ? undefined : 'from',
      isHttpUrl(body.status_callback_url) ? undefined : 'status_callback_url',
      typeof body.stream_url === 'string' && /^wss?:\/\//.test(body.stream_url) ? undefined : 'stream_url',
      typeof body.stream_token === 'string' && body.stream_token ? undefined : 'stream_token',
      body.machine_detection_url === undefined || isHttpUrl(body.machine_detection_url) ? undefined : 'machine_detection_url',
      body.timeout_seconds === undefined || (Number.isInteger(body.timeout_seconds) && body.timeout_seconds > 0 && body.timeout_seconds <= 600)
        ? undefined
        : 'timeout_seconds',
    ].filter(Boolean);
    if (problems.length) return { status: 400, message: `missing or invalid: ${problems.join(', ')}` };
    const call = this.newCall({
      direction: 'outbound',
      to: body.to,
      from: body.from,
      agentId: typeof body.agent_id === 'string' && body.agent_id ? body.agent_id : null,
      status: 'queued',
      streamUrl: body.stream_url,
      streamToken: body.stream_token,
      statusCallbackUrl: body.status_callback_url,
      machineDetectionUrl: body.machine_detection ? (body.machine_detection_url ?? body.status_callback_url) : undefined,
      ringSeconds: body.timeout_seconds ?? this.defaultRingSeconds,
      page: undefined,
    });
    // Rings once the REST answer is on its way, so the carrier's id is known before the first callback arrives.
    this.after(call, 0, () => this.ring(call));
    return call;
  }

  private ring(call: SwitchCall): void {
    if (call.status !== 'queued') return;
    this.setStatus(call, 'ringing');
    this.broadcast({ type: 'ring', call: phoneCall(call) });
    this.after(call, call.ringSeconds * 1000, () => {
      if (call.status !== 'ringing') return;
      this.broadcast({ type: 'ring-stop', call_id: call.id, reason: 'no_answer' });
      this.finish(call, 'no_answer');
    });
  }

  private answer(page: WebSocket, call: SwitchCall, who: 'human' | 'machine'): void {
    if (call.direction !== 'outbound' || call.status !== 'ringing') {
      send(page, { type: 'error', call_id: call.id, message: call.page ? 'the call was answered on another phone' : 'the call is not ringing' });
      return;
    }
    this.clearTimers(call);
    call.page = page;
    call.answeredBy = who;
    call.answeredAt = Date.now();
    for (const other of this.pages) if (other !== page) send(other, { type: 'ring-stop', call_id: call.id, reason: 'answered_elsewhere' });
    send(page, { type: 'connected', call_id: call.id, stream_url: call.streamUrl, stream_token: call.streamToken });
    this.setStatus(call, 'in_progress');
    const url = call.machineDetectionUrl;
    if (url) {
      // The verdict comes a moment after the answer, as a carrier's detector has to listen first.
      this.after(call, this.machineDetectionDelayMs, () => {
        if (call.status !== 'in_progress') return;
        this.webhook(call, url, { [DEV_FIELDS.callId]: call.id, [DEV_FIELDS.answeredBy]: who });
      });
    }
  }

  private endCall(id: string): SwitchCall | ApiError {
    const call = this.calls.get(id);
    if (!call) return { status: 404, message: `no call ${id}` };
    if (isTerminalCarrierCallStatus(call.status)) return call;
    if (call.status === 'in_progress') {
      if (call.page) send(call.page, { type: 'ended', call_id: call.id, reason: 'remote_hangup' });
      this.finish(call, 'completed');
    } else {
      if (call.direction === 'outbound') this.broadcast({ type: 'ring-stop', call_id: call.id, reason: 'canceled' });
      else if (call.page) send(call.page, { type: 'ended', call_id: call.id, reason: 'remote_hangup' });
      this.finish(call, 'canceled');
    }
    return call;
  }

  /**
   * The other party always answers: the page shows the transfer, its leg ends once the other party is reached,
   * the result (`answered`) goes to the result URL, and the call completes (Parley records it `transferred`).
   */
  private transferCall(id: string, body: DevTransferBody): SwitchCall | ApiError {
    const call = this.calls.get(id);
    if (!call) return { status: 404, message: `no call ${id}` };
    const destination = typeof body.destination === 'string' ? body.destination : '';
    if (!isE164(destination) && !isSipUri(destination)) return { status: 400, message: 'destination must be an E.164 number or a sip: URI' };
    if (body.result_url !== undefined && !isHttpUrl(body.result_url)) return { status: 400, message: 'result_url must be an http(s) URL' };
    if (call.status !== 'in_progress') return { status: 409, message: `the call is ${call.status}, not in progress` };
    const page = call.page;
    if (page) send(page, { type: 'transferring', call_id: call.id, destination });
    this.after(call, this.transferConnectMs, () => {
      if (call.status !== 'in_progress') return;
      if (page) send(page, { type: 'ended', call_id: call.id, reason: 'transferred', destination });
      call.page = undefined;
      if (body.result_url) this.webhook(call, body.result_url, { [DEV_FIELDS.callId]: call.id, [DEV_FIELDS.outcome]: 'answered' });
      this.finish(call, 'completed');
    });
    return call;
  }

  // Inbound: a page → an agent.

  private async dial(page: WebSocket, message: { agent_id?: unknown; from?: unknown }): Promise<void> {
    const agentId = typeof message.agent_id === 'string' ? message.agent_id.trim() : '';
    const from = typeof message.from === 'string' && message.from ? message.from : DEV_PHONE_NUMBER;
    if (!AGENT_ID.test(agentId)) return send(page, { type: 'error', message: 'give the id of the agent to call (agt_…)' });
    if (!isE164(from)) return send(page, { type: 'error', message: 'the number to call from must be E.164, such as +15555550123' });
    const call = this.newCall({
      direction: 'inbound',
      to: DEV_CARRIER_NUMBER,
      from,
      agentId,
      status: 'ringing',
      streamUrl: '',
      streamToken: '',
      statusCallbackUrl: `${this.publicUrl}/carriers/${DEV_CARRIER_NAME}/status`,
      machineDetectionUrl: undefined,
      ringSeconds: this.defaultRingSeconds,
      page,
    });
    send(page, { type: 'dialing', call: phoneCall(call) });
    const url = `${this.publicUrl}/carriers/${DEV_CARRIER_NAME}/voice/${encodeURIComponent(agentId)}`;
    const params = { [DEV_FIELDS.callId]: call.id, [DEV_FIELDS.from]: call.from, [DEV_FIELDS.to]: call.to, [DEV_FIELDS.direction]: 'inbound', [DEV_FIELDS.status]: 'ringing' };
    let markup: DevMarkup | undefined;
    let refusal = '';
    try {
      const res = await this.post(url, params);
      const text = await res.text();
      if (res.ok) markup = JSON.parse(text) as DevMarkup;
      else refusal = `${res.status} ${problemText(text)}`;
    } catch (error) {
      refusal = (error as Error).message;
    }
    if (call.status !== 'ringing') return; // the page hung up while the agent was being reached
    if (!markup || !('stream' in markup)) {
      send(page, { type: 'ended', call_id: call.id, reason: 'rejected', message: refusal || 'the gateway answered without a stream' });
      // Parley kept no call it refused, so there is nobody to tell.
      call.endedAt = Date.now();
      call.page = undefined;
      this.setStatus(call, 'failed', { post: false });
      return;
    }
    call.streamUrl = markup.stream.url;
    call.streamToken = markup.stream.token;
    call.answeredAt = Date.now();
    send(page, { type: 'connected', call_id: call.id, stream_url: call.streamUrl, stream_token: call.streamToken });
    this.setStatus(call, 'in_progress');
  }

  // Shared.

  /** The page's side hangs up: an answered leg completes, one not yet answered is canceled. */
  private hangUp(call: SwitchCall): void {
    this.finish(call, call.status === 'in_progress' ? 'completed' : 'canceled');
  }

  private finish(call: SwitchCall, status: CarrierCallStatus): void {
    if (isTerminalCarrierCallStatus(call.status)) return;
    this.clearTimers(call);
    call.endedAt = Date.now();
    call.page = undefined;
    this.setStatus(call, status);
    this.forgetOldCalls();
  }

  private setStatus(call: SwitchCall, status: CarrierCallStatus, options: { post?: boolean } = {}): void {
    call.status = status;
    call.updatedAt = Date.now();
    if (options.post === false) return;
    const duration = durationOf(call);
    this.webhook(call, call.statusCallbackUrl, {
      [DEV_FIELDS.callId]: call.id,
      [DEV_FIELDS.status]: status,
      [DEV_FIELDS.direction]: call.direction,
      [DEV_FIELDS.from]: call.from,
      [DEV_FIELDS.to]: call.to,
      [DEV_FIELDS.timestamp]: new Date(call.updatedAt).toISOString(),
      ...(duration !== null ? { [DEV_FIELDS.duration]: String(duration) } : {}),
    });
  }

  /** Queues a signed webhook of the call; a failure is logged (the calls service's reconciler asks later). */
  private webhook(call: SwitchCall, url: string, params: Record<string, string>): void {
    call.webhooks = call.webhooks.then(async () => {
      if (this.closed) return;
      try {
        const res = await this.post(url, params);
        await res.arrayBuffer();
        if (!res.ok) this.log?.warn({ callId: call.id, url, status: res.status }, 'dev switch webhook refused');
      } catch (error) {
        this.log?.warn({ callId: call.id, url, err: error }, 'dev switch webhook not delivered');
      }
    });
  }

  private post(url: string, params: Record<string, string>): Promise<Response> {
    const local = url.startsWith(`${this.publicUrl}/`) ? this.deliverTo?.()?.replace(/\/+$/, '') : undefined;
    return fetch(local ? `${local}${url.slice(this.publicUrl.length)}` : url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', [DEV_SIGNATURE_HEADER]: signDevWebhook(this.webhookKey, url, params) },
      body: new URLSearchParams(params).toString(),
      signal: AbortSignal.timeout(this.webhookTimeoutMs),
    });
  }

  private newCall(fields: Omit<SwitchCall, 'id' | 'answeredAt' | 'endedAt' | 'answeredBy' | 'updatedAt' | 'timers' | 'webhooks'>): SwitchCall {
    const call: SwitchCall = {
      ...fields,
      id: `DV${randomBytes(16).toString('hex')}`,
      answeredAt: undefined,
      endedAt: undefined,
      answeredBy: null,
      updatedAt: Date.now(),
      timers: new Set(),
      webhooks: Promise.resolve(),
    };
    this.calls.set(call.id, call);
    return call;
  }

  private callOr404(id: string): SwitchCall | ApiError {
    return this.calls.get(id) ?? { status: 404, message: `no call ${id}` };
  }

  private after(call: SwitchCall, ms: number, run: () => void): void {
    const timer = setTimeout(() => {
      call.timers.delete(timer);
      run();
    }, ms);
    call.timers.add(timer);
  }

  private clearTimers(call: SwitchCall): void {
    for (const timer of call.timers) clearTimeout(timer);
    call.timers.clear();
  }

  private broadcast(message: DevPhoneServerMessage): void {
    for (const page of this.pages) send(page, message);
  }

  private forgetOldCalls(): void {
    const ended = [...this.calls.values()].filter((c) => isTerminalCarrierCallStatus(c.status));
    for (const call of ended.slice(0, Math.max(0, ended.length - this.keepEndedCalls))) this.calls.delete(call.id);
  }
}

function send(page: WebSocket, message: DevPhoneServerMessage): void {
  if (page.readyState === WebSocket.OPEN) page.send(JSON.stringify(message));
}

function phoneCall(call: SwitchCall): DevPhoneCall {
  return { id: call.id, direction: call.direction, to: call.to, from: call.from, agent_id: call.agentId };
}

function resource(call: SwitchCall): DevCallResource {
  return {
    id: call.id,
    direction: call.direction,
    to: call.to,
    from: call.from,
    status: call.status,
    duration_seconds: durationOf(call),
    answered_by: call.answeredBy,
    updated_at: new Date(call.updatedAt).toISOString(),
  };
}

/** Whole seconds from answer to end once the call is over (0 when never answered); null while it is live. */
function durationOf(call: SwitchCall): number | null {
  if (call.endedAt === undefined) return null;
  return call.answeredAt === undefined ? 0 : Math.round((call.endedAt - call.answeredAt) / 1000);
}

function apiError(error: ApiError): DevSwitchHttpResponse {
  return { status: error.status, contentType: 'application/json', body: JSON.stringify({ message: error.message }) };
}

function isHttpUrl(value: unknown): value is string {
  return typeof value === 'string' && /^https?:\/\/\S+$/.test(value);
}

function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}

/** The words of a problem+json answer (detail or message), else the body itself, short. */
function problemText(text: string): string {
  try {
    const problem = JSON.parse(text) as { detail?: unknown; message?: unknown; title?: unknown };
    return String(problem.detail ?? problem.message ?? problem.title ?? text).slice(0, 300);
  } catch {
    return text.slice(0, 300);
  }
}
