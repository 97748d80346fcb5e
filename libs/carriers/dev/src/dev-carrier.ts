import {
  CARRIER_CALL_STATUSES,
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
  PlacedCall,
  TransferOptions,
  TransferResult,
} from '@parley/carrier-core';
import {
  DEV_CARRIER_NAME,
  DEV_FIELDS,
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

export interface DevCarrierOptions {
  /** Where the dev switch is reached: the gateway's base URL (DEV_CARRIER_URL, else PUBLIC_URL). */
  switchUrl: string;
  /** The deployment's SECRET_KEY: the switch's API key and webhook key are derived from it. */
  secret: string;
  /** Timeout of each request to the switch. Default 5 s. */
  requestTimeoutMs?: number;
}

const TRANSFER_OUTCOMES: readonly TransferResult['outcome'][] = ['answered', 'no_answer', 'busy', 'failed', 'canceled'];

/**
 * CarrierAdapter of the built-in development carrier: the "network" is the DevSwitch the gateway hosts, which
 * rings the dev phone pages open on the deployment. Like Twilio, calls are placed, ended, transferred and looked up
 * over the switch's REST API (bearer key derived from SECRET_KEY), and the switch reports back with signed
 * form-encoded webhooks to the gateway's `/carriers/dev/…` routes, so the calls service drives it exactly as a
 * phone carrier and everything downstream (status, machine detection, transfers, media, webhooks) runs unchanged.
 */
export class DevCarrier implements CarrierAdapter {
  readonly name = DEV_CARRIER_NAME;
  private readonly base: string;
  private readonly apiKey: string;
  private readonly webhookKey: Buffer;
  private readonly timeoutMs: number;

  constructor(options: DevCarrierOptions) {
    this.base = `${options.switchUrl.replace(/\/+$/, '')}${DEV_SWITCH_API_PATH}`;
    const keys = devCarrierKeys(options.secret);
    this.apiKey = keys.apiKey;
    this.webhookKey = keys.webhookKey;
    this.timeoutMs = options.requestTimeoutMs ?? 5000;
  }

  async placeCall(req: PlaceCallRequest): Promise<PlacedCall> {
    if (!req.to || !req.from) throw invalid('to and from are required');
    if (!req.statusCallbackUrl) throw invalid('statusCallbackUrl is required');
    const body: DevPlaceCallBody = {
      to: req.to,
      from: req.from,
      stream_url: req.streamUrl,
      stream_token: req.streamToken,
      status_callback_url: req.statusCallbackUrl,
      ...(req.agentId ? { agent_id: req.agentId } : {}),
      ...(req.machineDetection ? { machine_detection: true, machine_detection_url: req.machineDetectionUrl ?? req.statusCallbackUrl } : {}),
      ...(req.timeoutSeconds !== undefined ? { timeout_seconds: req.timeoutSeconds } : {}),
    };
    const call = await this.request('placeCall', 'POST', '/calls', body);
    return { carrier: this.name, carrierCallId: call.id, status: call.status };
  }

  /** Hangs up; a call that is already over is not an error (as on Twilio). */
  async endCall(carrierCallId: string): Promise<void> {
    if (!carrierCallId) throw invalid('carrierCallId is required');
    await this.request('endCall', 'POST', `/calls/${encodeURIComponent(carrierCallId)}/end`, {});
  }

  async fetchCall(carrierCallId: string): Promise<CarrierStatusUpdate> {
    if (!carrierCallId) throw invalid('carrierCallId is required');
    const call = await this.request('fetchCall', 'GET', `/calls/${encodeURIComponent(carrierCallId)}`);
    const update: CarrierStatusUpdate = { carrierCallId, status: call.status, at: new Date(call.updated_at) };
    if (call.duration_seconds !== null) update.durationSeconds = call.duration_seconds;
    if (call.answered_by) update.answeredBy = call.answered_by;
    return update;
  }

  async transferCall(carrierCallId: string, destination: string, options: TransferOptions = {}): Promise<void> {
    if (!carrierCallId) throw invalid('carrierCallId is required');
    if (!isE164(destination) && !isSipUri(destination)) {
      throw invalid(`transfer destination must be E.164 or a sip: URI, got ${JSON.stringify(destination)}`);
    }
    const body: DevTransferBody = {
      destination,
      ...(options.resultUrl ? { result_url: options.resultUrl } : {}),
      ...(options.timeoutSeconds ? { timeout_seconds: options.timeoutSeconds } : {}),
    };
    await this.request('transferCall', 'POST', `/calls/${encodeURIComponent(carrierCallId)}/transfer`, body);
  }

  answerInbound(params: { streamUrl: string; streamToken: string }): CarrierMarkup {
    return markup({ stream: { url: params.streamUrl, token: params.streamToken } });
  }

  hangupMarkup(): CarrierMarkup {
    return markup({ hangup: true });
  }

  verifyWebhook(req: CarrierWebhookRequest): boolean {
    const signature = headerValue(req.headers, DEV_SIGNATURE_HEADER);
    return !!signature && sameSecret(signature, signDevWebhook(this.webhookKey, req.url, req.params));
  }

  parseStatusCallback(params: Record<string, string>): CarrierStatusUpdate {
    const carrierCallId = params[DEV_FIELDS.callId];
    const status = params[DEV_FIELDS.status] as CarrierCallStatus;
    if (!carrierCallId) throw invalid('status callback without CallId');
    if (!CARRIER_CALL_STATUSES.includes(status)) throw invalid(`unknown Status ${JSON.stringify(params[DEV_FIELDS.status])}`);
    const at = params[DEV_FIELDS.timestamp] ? new Date(params[DEV_FIELDS.timestamp]) : new Date();
    const update: CarrierStatusUpdate = { carrierCallId, status, at: Number.isNaN(at.getTime()) ? new Date() : at };
    const duration = params[DEV_FIELDS.duration];
    if (duration !== undefined && /^\d+$/.test(duration)) update.durationSeconds = Number(duration);
    const answeredBy = answeredByOf(params[DEV_FIELDS.answeredBy]);
    if (answeredBy) update.answeredBy = answeredBy;
    return update;
  }

  parseInbound(params: Record<string, string>): InboundCall {
    const { [DEV_FIELDS.callId]: carrierCallId, [DEV_FIELDS.from]: from, [DEV_FIELDS.to]: to } = params;
    if (!carrierCallId || !from || !to) throw invalid('inbound call webhook without CallId, From or To');
    return { carrierCallId, from, to };
  }

  parseMachineDetection(params: Record<string, string>): MachineDetection {
    const carrierCallId = params[DEV_FIELDS.callId];
    const answeredBy = answeredByOf(params[DEV_FIELDS.answeredBy]);
    if (!carrierCallId || !answeredBy) throw invalid('machine detection callback without CallId or AnsweredBy');
    return { carrierCallId, answeredBy };
  }

  parseTransferResult(params: Record<string, string>): TransferResult {
    const carrierCallId = params[DEV_FIELDS.callId];
    const outcome = params[DEV_FIELDS.outcome] as TransferResult['outcome'];
    if (!carrierCallId || !TRANSFER_OUTCOMES.includes(outcome)) throw invalid('transfer result without CallId or a known Outcome');
    return { carrierCallId, outcome };
  }

  private async request(operation: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<DevCallResource> {
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new CarrierError(`dev: ${operation} failed: the dev switch at ${this.base} did not answer (${(error as Error).message})`, {
        code: 'unavailable',
        carrier: DEV_CARRIER_NAME,
        cause: error,
      });
    }
    const text = await res.text();
    if (res.ok) return JSON.parse(text) as DevCallResource;
    const message = (() => {
      try {
        return String((JSON.parse(text) as { message?: unknown }).message ?? text);
      } catch {
        return text;
      }
    })();
    // A gateway that serves no switch (DEV_CARRIER off there) answers every /dev path 404: not "no such call".
    const noSwitch = res.status === 404 && operation === 'placeCall';
    throw new CarrierError(`dev: ${operation} failed: ${res.status} ${noSwitch ? `no dev switch is served at ${this.base}` : message}`.trim(), {
      code: noSwitch ? 'unavailable' : errorCode(res.status),
      carrier: DEV_CARRIER_NAME,
      status: res.status,
    });
  }
}

function markup(body: DevMarkup): CarrierMarkup {
  return { contentType: 'application/json', body: JSON.stringify(body) };
}

function answeredByOf(value: string | undefined): 'human' | 'machine' | 'unknown' | undefined {
  return value === 'human' || value === 'machine' || value === 'unknown' ? value : undefined;
}

function errorCode(status: number): CarrierErrorCode {
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 404) return 'not_found';
  if (status === 409) return 'call_state';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'unavailable';
  if (status >= 400) return 'invalid_request';
  return 'unknown';
}

function invalid(message: string): CarrierError {
  return new CarrierError(`dev: ${message}`, { code: 'invalid_request', carrier: DEV_CARRIER_NAME });
}
