import {
  CarrierAdapter,
  CarrierCallStatus,
  CarrierError,
  CarrierErrorCode,
  CarrierMarkup,
  CarrierStatusUpdate,
  CarrierWebhookRequest,
  headerValue,
  InboundCall,
  isE164,
  isSipUri,
  MachineDetection,
  PlaceCallRequest,
  TransferOptions,
  TransferResult,
  PlacedCall,
} from '@parley/carrier-core';
import twilio from 'twilio';
import type SdkRequestClient from 'twilio/lib/base/RequestClient';
import type SdkResponse from 'twilio/lib/http/response';

type TwilioClient = ReturnType<typeof twilio>;

export const TWILIO_CARRIER_NAME = 'twilio';
/** The header carrying Twilio's webhook signature (node:http gives it in lower case). */
export const TWILIO_SIGNATURE_HEADER = 'X-Twilio-Signature';
/** Twilio's error for an update the call's state does not allow (e.g. redirecting a call that is over). */
const TWILIO_CALL_STATE_ERROR = 21220;

export interface TwilioCarrierOptions {
  /** `AC…` account sid. */
  accountSid: string;
  /** The account's auth token: REST API password and webhook signing key. */
  authToken: string;
  /**
   * Where the REST API is reached instead of `https://api.twilio.com`, e.g. `http://127.0.0.1:PORT` (a
   * FakeTwilioServer) or a proxy. Every request's scheme, host and port are replaced by this URL's (its path,
   * if any, is prefixed to Twilio's), whatever TWILIO_EDGE / TWILIO_REGION say.
   */
  apiBaseUrl?: string;
  /** Timeout of each REST request. Default 30 s (the SDK's). */
  requestTimeoutMs?: number;
}

/**
 * CarrierAdapter for Twilio Programmable Voice on the official `twilio` SDK. Outbound calls are created with
 * inline TwiML `<Connect><Stream>` (bidirectional Media Streams to `streamUrl`, the stream token as a custom
 * `<Parameter name="token">`), status callbacks for initiated, ringing, answered and completed.
 */
export class TwilioCarrier implements CarrierAdapter {
  readonly name = TWILIO_CARRIER_NAME;
  /** The SDK client (exposed for diagnostics and tests). */
  readonly client: TwilioClient;
  private readonly authToken: string;

  constructor(options: TwilioCarrierOptions) {
    if (!options.accountSid || !options.authToken) {
      throw new CarrierError('twilio: accountSid and authToken are required', {
        code: 'unauthorized',
        carrier: TWILIO_CARRIER_NAME,
      });
    }
    this.authToken = options.authToken;
    const httpClient =
      options.apiBaseUrl !== undefined || options.requestTimeoutMs !== undefined
        ? new BaseUrlRequestClient(options.apiBaseUrl, options.requestTimeoutMs)
        : undefined;
    this.client = twilio(options.accountSid, options.authToken, { autoRetry: false, ...(httpClient ? { httpClient } : {}) });
  }

  async placeCall(req: PlaceCallRequest): Promise<PlacedCall> {
    if (!req.to || !req.from) throw invalid('to and from are required');
    if (!req.statusCallbackUrl) throw invalid('statusCallbackUrl is required');
    const call = await this.rest('placeCall', () =>
      this.client.calls.create({
        to: req.to,
        from: req.from,
        twiml: streamTwiml(req.streamUrl, req.streamToken),
        statusCallback: req.statusCallbackUrl,
        statusCallbackMethod: 'POST',
        statusCallbackEvent: ['initiated', 'ringing', 'answered', 'completed'],
        // Asynchronous detection: the call connects at once and the verdict arrives on its own callback.
        ...(req.machineDetection
          ? {
              machineDetection: 'Enable',
              asyncAmd: 'true',
              asyncAmdStatusCallback: req.machineDetectionUrl ?? req.statusCallbackUrl,
              asyncAmdStatusCallbackMethod: 'POST',
            }
          : {}),
        ...(req.timeoutSeconds !== undefined ? { timeout: req.timeoutSeconds } : {}),
      }),
    );
    return { carrier: this.name, carrierCallId: call.sid, status: mapTwilioCallStatus(call.status) ?? 'queued' };
  }

  /** Hangs up (Status=completed). A call that is already over is not an error. */
  async endCall(carrierCallId: string): Promise<void> {
    if (!carrierCallId) throw invalid('carrierCallId is required');
    try {
      await this.rest('endCall', () => this.client.calls(carrierCallId).update({ status: 'completed' }));
    } catch (error) {
      if (error instanceof CarrierError && error.code === 'call_state') return;
      throw error;
    }
  }

  /** GET Calls/{Sid}.json: the call's status, duration once over, and AnsweredBy when detection ran. */
  async fetchCall(carrierCallId: string): Promise<CarrierStatusUpdate> {
    if (!carrierCallId) throw invalid('carrierCallId is required');
    const call = await this.rest('fetchCall', () => this.client.calls(carrierCallId).fetch());
    const status = mapTwilioCallStatus(call.status);
    if (!status) throw new CarrierError(`twilio: fetchCall: unknown call status ${JSON.stringify(call.status)}`, { code: 'unknown', carrier: this.name });
    const update: CarrierStatusUpdate = { carrierCallId, status, at: call.dateUpdated ?? new Date() };
    if (call.duration && /^\d+$/.test(call.duration)) update.durationSeconds = Number(call.duration);
    const answeredBy = mapAnsweredBy(call.answeredBy ?? undefined);
    if (answeredBy) update.answeredBy = answeredBy;
    return update;
  }

  /**
   * Redirects the call to TwiML `<Dial><Number>` (E.164) or `<Dial><Sip>` (sip:/sips: URI). With a result URL,
   * the `<Dial action>` posts `DialCallStatus` there when the other leg is over, and the call goes on with the
   * TwiML answered (back to the agent when nobody answered).
   */
  async transferCall(carrierCallId: string, destination: string, options: TransferOptions = {}): Promise<void> {
    if (!carrierCallId) throw invalid('carrierCallId is required');
    const response = new twilio.twiml.VoiceResponse();
    const dial = response.dial({
      ...(options.resultUrl ? { action: options.resultUrl, method: 'POST' } : {}),
      ...(options.timeoutSeconds ? { timeout: options.timeoutSeconds } : {}),
    });
    if (isSipUri(destination)) dial.sip(destination);
    else if (isE164(destination)) dial.number(destination);
    else throw invalid(`transfer destination must be E.164 or a sip: URI, got ${JSON.stringify(destination)}`);
    await this.rest('transferCall', () => this.client.calls(carrierCallId).update({ twiml: response.toString() }));
  }

  answerInbound(params: { streamUrl: string; streamToken: string }): CarrierMarkup {
    return { contentType: 'text/xml', body: streamTwiml(params.streamUrl, params.streamToken) };
  }

  /** Checks `X-Twilio-Signature` (HMAC-SHA1 of the URL and sorted form params with the auth token). */
  verifyWebhook(req: CarrierWebhookRequest): boolean {
    const signature = headerValue(req.headers, TWILIO_SIGNATURE_HEADER);
    if (!signature) return false;
    try {
      return twilio.validateRequest(this.authToken, signature, req.url, req.params);
    } catch {
      return false; // e.g. an unparseable URL
    }
  }

  parseStatusCallback(params: Record<string, string>): CarrierStatusUpdate {
    const carrierCallId = params['CallSid'];
    if (!carrierCallId) throw invalid('status callback without CallSid');
    const status = mapTwilioCallStatus(params['CallStatus']);
    if (!status) throw invalid(`unknown CallStatus ${JSON.stringify(params['CallStatus'])}`);
    const update: CarrierStatusUpdate = { carrierCallId, status, at: parseTimestamp(params['Timestamp']) };
    const duration = params['CallDuration'];
    if (duration !== undefined && /^\d+$/.test(duration)) update.durationSeconds = Number(duration);
    const answeredBy = mapAnsweredBy(params['AnsweredBy']);
    if (answeredBy) update.answeredBy = answeredBy;
    return update;
  }

  /** The `<Dial action>` request: `DialCallStatus` completed (answered), no-answer, busy, failed or canceled. */
  parseTransferResult(params: Record<string, string>): TransferResult {
    const carrierCallId = params['CallSid'];
    const outcome = DIAL_OUTCOMES[params['DialCallStatus'] ?? ''];
    if (!carrierCallId || !outcome) throw invalid('transfer result without CallSid or a known DialCallStatus');
    return { carrierCallId, outcome };
  }

  hangupMarkup(): CarrierMarkup {
    const response = new twilio.twiml.VoiceResponse();
    response.hangup();
    return { contentType: 'text/xml', body: response.toString() };
  }

  /** Twilio's asynchronous AMD callback: `CallSid` and `AnsweredBy` (machine_start, machine_end_*, fax: machine). */
  parseMachineDetection(params: Record<string, string>): MachineDetection {
    const carrierCallId = params['CallSid'];
    const answeredBy = mapAnsweredBy(params['AnsweredBy']);
    if (!carrierCallId || !answeredBy) throw invalid('machine detection callback without CallSid or AnsweredBy');
    return { carrierCallId, answeredBy };
  }

  parseInbound(params: Record<string, string>): InboundCall {
    const { CallSid: carrierCallId, From: from, To: to } = params;
    if (!carrierCallId || !from || !to) throw invalid('inbound call webhook without CallSid, From or To');
    return { carrierCallId, from, to };
  }

  private async rest<T>(operation: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw toCarrierError(operation, error);
    }
  }
}

/** `<Response><Connect><Stream url="…"><Parameter name="token" value="…"/></Stream></Connect></Response>`. */
export function streamTwiml(streamUrl: string, streamToken: string): string {
  const response = new twilio.twiml.VoiceResponse();
  response.connect().stream({ url: streamUrl }).parameter({ name: 'token', value: streamToken });
  return response.toString();
}

const DIAL_OUTCOMES: Record<string, TransferResult['outcome']> = {
  completed: 'answered',
  answered: 'answered',
  'no-answer': 'no_answer',
  busy: 'busy',
  failed: 'failed',
  canceled: 'canceled',
};

const TWILIO_STATUSES: Record<string, CarrierCallStatus> = {
  queued: 'queued',
  initiated: 'queued',
  ringing: 'ringing',
  'in-progress': 'in_progress',
  completed: 'completed',
  busy: 'busy',
  'no-answer': 'no_answer',
  failed: 'failed',
  canceled: 'canceled',
};

/** Twilio's CallStatus in Parley's words; undefined for a value Twilio does not define. */
export function mapTwilioCallStatus(status: string | undefined): CarrierCallStatus | undefined {
  return status !== undefined && Object.prototype.hasOwnProperty.call(TWILIO_STATUSES, status)
    ? TWILIO_STATUSES[status]
    : undefined;
}

/** Twilio's AnsweredBy: `human`; `machine_start`, `machine_end_*` and `fax` are machines; anything else unknown. */
export function mapAnsweredBy(answeredBy: string | undefined): CarrierStatusUpdate['answeredBy'] {
  if (!answeredBy) return undefined;
  if (answeredBy === 'human') return 'human';
  if (answeredBy === 'fax' || answeredBy === 'machine_start' || answeredBy.startsWith('machine_end')) return 'machine';
  return 'unknown';
}

// Twilio's status callbacks carry `Timestamp` in RFC 2822 form ("Tue, 14 Nov 2023 18:30:00 +0000").
function parseTimestamp(value: string | undefined): Date {
  const at = value ? new Date(value) : undefined;
  return at && !Number.isNaN(at.getTime()) ? at : new Date();
}

function invalid(message: string): CarrierError {
  return new CarrierError(`twilio: ${message}`, { code: 'invalid_request', carrier: TWILIO_CARRIER_NAME });
}

function toCarrierError(operation: string, error: unknown): CarrierError {
  if (error instanceof CarrierError) return error;
  if (error instanceof twilio.RestException) {
    return new CarrierError(`twilio: ${operation} failed: ${error.status} ${error.code ?? ''} ${error.message}`.trim(), {
      code: errorCode(error.status, error.code),
      carrier: TWILIO_CARRIER_NAME,
      status: error.status,
      carrierCode: error.code,
      cause: error,
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new CarrierError(`twilio: ${operation} failed: ${message}`, {
    code: 'unavailable',
    carrier: TWILIO_CARRIER_NAME,
    cause: error,
  });
}

function errorCode(status: number, code: number | undefined): CarrierErrorCode {
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 404) return 'not_found';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'unavailable';
  if (code === TWILIO_CALL_STATE_ERROR) return 'call_state';
  if (status >= 400) return 'invalid_request';
  return 'unknown';
}

/**
 * The SDK's own RequestClient (axios) with every request's origin replaced by a configured base URL: the SDK
 * builds `https://api.twilio.com/2010-04-01/…` (or an edge/region host), this sends it to `apiBaseUrl` instead.
 */
class BaseUrlRequestClient extends twilio.RequestClient {
  private readonly base: URL | undefined;

  constructor(apiBaseUrl: string | undefined, timeoutMs: number | undefined) {
    super(timeoutMs !== undefined ? { timeout: timeoutMs } : {});
    if (apiBaseUrl !== undefined) {
      const base = new URL(apiBaseUrl);
      if (base.protocol !== 'http:' && base.protocol !== 'https:') {
        throw new Error(`twilio: apiBaseUrl must be http(s), got ${apiBaseUrl}`);
      }
      this.base = base;
    }
  }

  override request<TData>(opts: SdkRequestClient.RequestOptions<TData>): Promise<SdkResponse<TData>> {
    if (!this.base || !opts.uri) return super.request<TData>(opts);
    const target = new URL(opts.uri);
    const prefix = this.base.pathname.replace(/\/+$/, '');
    const rewritten = new URL(`${prefix}${target.pathname}${target.search}`, this.base.origin);
    return super.request<TData>({ ...opts, uri: rewritten.href });
  }
}
