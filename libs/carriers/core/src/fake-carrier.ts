import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  CARRIER_CALL_STATUSES,
  CarrierAdapter,
  CarrierCallStatus,
  CarrierError,
  CarrierErrorCode,
  CarrierMarkup,
  CarrierStatusUpdate,
  CarrierWebhookRequest,
  InboundCall,
  isE164,
  isSipUri,
  isTerminalCarrierCallStatus,
  MachineDetection,
  TransferResult,
  PlaceCallRequest,
  PlacedCall,
} from './carrier-adapter';

/** The header carrying a FakeCarrier webhook's signature. */
export const FAKE_CARRIER_SIGNATURE_HEADER = 'x-fake-carrier-signature';

export type FakeCarrierOperation =
  | { kind: 'placeCall'; request: PlaceCallRequest; carrierCallId?: string }
  | { kind: 'endCall'; carrierCallId: string }
  | { kind: 'fetchCall'; carrierCallId: string }
  | { kind: 'transferCall'; carrierCallId: string; destination: string };

/** A call the fake placed (or was told about), with what happened to it. */
export interface FakeCarrierCall {
  carrierCallId: string;
  request: PlaceCallRequest;
  status: CarrierCallStatus;
  /** Status changes still to report (see nextStatusCallback). */
  pending: CarrierCallStatus[];
  /** Destinations the call was transferred to, in order. */
  transfers: string[];
}

export interface FakeCarrierOptions {
  /** Adapter name. Default `fake`. */
  name?: string;
  /** Secret the fake signs its webhooks with. Default `fake-carrier-secret`. */
  secret?: string;
  /** Status placeCall reports. Default `queued`. */
  placeStatus?: CarrierCallStatus;
  /** Status changes a placed call goes through (nextStatusCallback). Default ringing, in_progress, completed. */
  statuses?: CarrierCallStatus[];
}

/**
 * In-memory CarrierAdapter for unit tests of its consumers: records every operation, places calls with ids
 * `fake-call-1`, `fake-call-2`, …, plays scripted status changes back as status-callback webhook fields, signs
 * its webhooks (HMAC-SHA256 in `x-fake-carrier-signature`) and fails operations on request (`failNext`).
 *
 * Its webhook fields: status callback `CallId`, `Status` (a CarrierCallStatus), `Duration`, `AnsweredBy`,
 * `Timestamp` (ISO 8601); inbound `CallId`, `From`, `To`.
 */
export class FakeCarrier implements CarrierAdapter {
  readonly name: string;
  /** Every operation, in order (failed ones included). */
  readonly operations: FakeCarrierOperation[] = [];
  /** Calls by carrierCallId, in the order placed. */
  readonly calls = new Map<string, FakeCarrierCall>();
  private readonly secret: string;
  private readonly placeStatus: CarrierCallStatus;
  private statuses: CarrierCallStatus[];
  private readonly failures: Record<FakeCarrierOperation['kind'], Error[]> = {
    placeCall: [],
    endCall: [],
    fetchCall: [],
    transferCall: [],
  };
  private sequence = 0;

  constructor(options: FakeCarrierOptions = {}) {
    this.name = options.name ?? 'fake';
    this.secret = options.secret ?? 'fake-carrier-secret';
    this.placeStatus = options.placeStatus ?? 'queued';
    this.statuses = [...(options.statuses ?? ['ringing', 'in_progress', 'completed'])];
  }

  /** Requests of every placeCall that succeeded, in order. */
  get placed(): PlaceCallRequest[] {
    return [...this.calls.values()].map((c) => c.request);
  }

  /** Ids of every call endCall was asked to end, in order. */
  get ended(): string[] {
    return this.operations.flatMap((op) => (op.kind === 'endCall' ? [op.carrierCallId] : []));
  }

  /** Every transfer asked for, in order. */
  get transfers(): Array<{ carrierCallId: string; destination: string }> {
    return this.operations.flatMap((op) =>
      op.kind === 'transferCall' ? [{ carrierCallId: op.carrierCallId, destination: op.destination }] : [],
    );
  }

  /** The call placed last. */
  get lastCall(): FakeCarrierCall | undefined {
    return [...this.calls.values()].at(-1);
  }

  /** Status changes that calls placed from now on go through. */
  scriptStatuses(...statuses: CarrierCallStatus[]): this {
    this.statuses = [...statuses];
    return this;
  }

  /** Makes the next call of `operation` fail, with the given error or a CarrierError of the given code. */
  failNext(operation: FakeCarrierOperation['kind'], error: Error | CarrierErrorCode = 'unavailable'): this {
    this.failures[operation].push(
      typeof error === 'string'
        ? new CarrierError(`${this.name}: scripted ${operation} failure (${error})`, { code: error, carrier: this.name })
        : error,
    );
    return this;
  }

  async placeCall(req: PlaceCallRequest): Promise<PlacedCall> {
    const op: FakeCarrierOperation = { kind: 'placeCall', request: { ...req } };
    this.operations.push(op);
    this.throwScriptedFailure('placeCall');
    if (!req.to || !req.from) {
      throw new CarrierError(`${this.name}: to and from are required`, { code: 'invalid_request', carrier: this.name });
    }
    const carrierCallId = `fake-call-${++this.sequence}`;
    op.carrierCallId = carrierCallId;
    this.calls.set(carrierCallId, {
      carrierCallId,
      request: { ...req },
      status: this.placeStatus,
      pending: [...this.statuses],
      transfers: [],
    });
    return { carrier: this.name, carrierCallId, status: this.placeStatus };
  }

  async endCall(carrierCallId: string): Promise<void> {
    this.operations.push({ kind: 'endCall', carrierCallId });
    this.throwScriptedFailure('endCall');
    const call = this.call(carrierCallId);
    // Ending a call that is already over is not an error.
    if (!isTerminalCarrierCallStatus(call.status)) {
      call.status = call.status === 'in_progress' ? 'completed' : 'canceled';
      call.pending = [call.status];
    }
  }

  /** The call's recorded status (moved by endCall and statusCallback, i.e. also by a callback never delivered). */
  async fetchCall(carrierCallId: string): Promise<CarrierStatusUpdate> {
    this.operations.push({ kind: 'fetchCall', carrierCallId });
    this.throwScriptedFailure('fetchCall');
    return { carrierCallId, status: this.call(carrierCallId).status, at: new Date() };
  }

  parseTransferResult(params: Record<string, string>): TransferResult {
    const carrierCallId = params['CallId'];
    const outcome = params['Outcome'] as TransferResult['outcome'];
    if (!carrierCallId || !['answered', 'no_answer', 'busy', 'failed', 'canceled'].includes(outcome)) {
      throw this.invalid('transfer result without CallId or Outcome');
    }
    return { carrierCallId, outcome };
  }

  hangupMarkup(): CarrierMarkup {
    return { contentType: 'application/json', body: JSON.stringify({ action: 'hangup' }) };
  }

  async transferCall(carrierCallId: string, destination: string): Promise<void> {
    this.operations.push({ kind: 'transferCall', carrierCallId, destination });
    this.throwScriptedFailure('transferCall');
    if (!isE164(destination) && !isSipUri(destination)) {
      throw new CarrierError(`${this.name}: transfer destination must be E.164 or a sip: URI`, {
        code: 'invalid_request',
        carrier: this.name,
      });
    }
    const call = this.call(carrierCallId);
    if (isTerminalCarrierCallStatus(call.status)) {
      throw new CarrierError(`${this.name}: call ${carrierCallId} is over (${call.status})`, {
        code: 'call_state',
        carrier: this.name,
      });
    }
    call.transfers.push(destination);
  }

  answerInbound(params: { streamUrl: string; streamToken: string }): CarrierMarkup {
    return {
      contentType: 'application/json',
      body: JSON.stringify({ connect: { stream: { url: params.streamUrl, token: params.streamToken } } }),
    };
  }

  verifyWebhook(req: CarrierWebhookRequest): boolean {
    const header = headerValue(req.headers, FAKE_CARRIER_SIGNATURE_HEADER);
    if (!header) return false;
    const expected = Buffer.from(this.signature(req.url, req.params));
    const given = Buffer.from(header);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  parseStatusCallback(params: Record<string, string>): CarrierStatusUpdate {
    const carrierCallId = params['CallId'];
    const status = params['Status'] as CarrierCallStatus;
    if (!carrierCallId) throw this.invalid('status callback without CallId');
    if (!CARRIER_CALL_STATUSES.includes(status)) throw this.invalid(`unknown call status ${String(params['Status'])}`);
    const update: CarrierStatusUpdate = { carrierCallId, status, at: params['Timestamp'] ? new Date(params['Timestamp']) : new Date() };
    if (Number.isNaN(update.at.getTime())) throw this.invalid(`bad Timestamp ${params['Timestamp']}`);
    if (params['Duration'] !== undefined) update.durationSeconds = Number(params['Duration']);
    const answeredBy = params['AnsweredBy'];
    if (answeredBy === 'human' || answeredBy === 'machine' || answeredBy === 'unknown') update.answeredBy = answeredBy;
    return update;
  }

  parseMachineDetection(params: Record<string, string>): MachineDetection {
    const carrierCallId = params['CallId'];
    const answeredBy = params['AnsweredBy'];
    if (!carrierCallId || (answeredBy !== 'human' && answeredBy !== 'machine' && answeredBy !== 'unknown')) {
      throw this.invalid('machine detection without CallId or AnsweredBy (human, machine, unknown)');
    }
    return { carrierCallId, answeredBy };
  }

  parseInbound(params: Record<string, string>): InboundCall {
    const { CallId: carrierCallId, From: from, To: to } = params;
    if (!carrierCallId || !from || !to) throw this.invalid('inbound call without CallId, From or To');
    return { carrierCallId, from, to };
  }

  /**
   * Status-callback fields for a change of the call to `status` (the call's recorded status follows). Pass them
   * to the consumer's webhook handler (signed with `signWebhook` if it verifies).
   */
  statusCallback(
    carrierCallId: string,
    status: CarrierCallStatus,
    extra: { durationSeconds?: number; answeredBy?: 'human' | 'machine' | 'unknown'; at?: Date } = {},
  ): Record<string, string> {
    const call = this.calls.get(carrierCallId);
    if (call) call.status = status;
    return {
      CallId: carrierCallId,
      Status: status,
      Timestamp: (extra.at ?? new Date()).toISOString(),
      ...(extra.durationSeconds !== undefined ? { Duration: String(extra.durationSeconds) } : {}),
      ...(extra.answeredBy ? { AnsweredBy: extra.answeredBy } : {}),
    };
  }

  /** Fields of the call's next scripted status change (undefined once the script is played out). */
  nextStatusCallback(
    carrierCallId: string,
    extra: { durationSeconds?: number; answeredBy?: 'human' | 'machine' | 'unknown'; at?: Date } = {},
  ): Record<string, string> | undefined {
    const next = this.call(carrierCallId).pending.shift();
    return next === undefined ? undefined : this.statusCallback(carrierCallId, next, extra);
  }

  /** Inbound-call webhook fields for a call from `from` to `to` (and records the call as ringing). */
  inboundCall(from: string, to: string, carrierCallId = `fake-inbound-${++this.sequence}`): Record<string, string> {
    this.calls.set(carrierCallId, {
      carrierCallId,
      request: { to, from, streamUrl: '', streamToken: '', statusCallbackUrl: '' },
      status: 'ringing',
      pending: ['in_progress', 'completed'],
      transfers: [],
    });
    return { CallId: carrierCallId, From: from, To: to };
  }

  /** A webhook request to `url` with `params`, signed so that verifyWebhook accepts it. */
  signWebhook(url: string, params: Record<string, string>): CarrierWebhookRequest {
    return { url, params: { ...params }, headers: { [FAKE_CARRIER_SIGNATURE_HEADER]: this.signature(url, params) } };
  }

  private signature(url: string, params: Record<string, string>): string {
    const data = Object.keys(params)
      .sort()
      .reduce((acc, key) => `${acc}${key}${params[key]}`, url);
    return createHmac('sha256', this.secret).update(data, 'utf8').digest('hex');
  }

  private call(carrierCallId: string): FakeCarrierCall {
    const call = this.calls.get(carrierCallId);
    if (!call) {
      throw new CarrierError(`${this.name}: no call ${carrierCallId}`, { code: 'not_found', carrier: this.name });
    }
    return call;
  }

  private throwScriptedFailure(operation: FakeCarrierOperation['kind']): void {
    const error = this.failures[operation].shift();
    if (error) throw error;
  }

  private invalid(message: string): CarrierError {
    return new CarrierError(`${this.name}: ${message}`, { code: 'invalid_request', carrier: this.name });
  }
}

/** A header's value (first one when repeated), looked up case-insensitively. */
export function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== wanted) continue;
    return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}
