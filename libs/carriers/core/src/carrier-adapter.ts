/**
 * The telephony carrier seen by the calls service: place, end and transfer calls, answer inbound calls with the
 * carrier's markup that connects the call's audio to Parley's media stream, and read the carrier's webhooks.
 * One adapter per carrier (Twilio, Telnyx, Vonage, …); the calls service knows only this interface.
 */

/** A call's state, in Parley's words (each adapter maps its carrier's own). */
export type CarrierCallStatus =
  | 'queued'
  | 'ringing'
  | 'in_progress'
  | 'completed'
  | 'busy'
  | 'no_answer'
  | 'failed'
  | 'canceled';

/** Every CarrierCallStatus, in lifecycle order. */
export const CARRIER_CALL_STATUSES: readonly CarrierCallStatus[] = [
  'queued',
  'ringing',
  'in_progress',
  'completed',
  'busy',
  'no_answer',
  'failed',
  'canceled',
];

/** Statuses after which nothing more happens on the call. */
export const TERMINAL_CARRIER_CALL_STATUSES: readonly CarrierCallStatus[] = [
  'completed',
  'busy',
  'no_answer',
  'failed',
  'canceled',
];

/** True for a status after which the call is over. */
export function isTerminalCarrierCallStatus(status: CarrierCallStatus): boolean {
  return TERMINAL_CARRIER_CALL_STATUSES.includes(status);
}

export interface PlaceCallRequest {
  /** Callee, E.164 (or a SIP URI where the carrier allows it). */
  to: string;
  /** Caller id, E.164, a number the carrier account owns. */
  from: string;
  /** WebSocket URL (wss://…) the carrier streams the call's audio to. */
  streamUrl: string;
  /** Token the carrier hands back on the media stream, identifying the call to the media worker. */
  streamToken: string;
  /** URL the carrier posts status changes to. */
  statusCallbackUrl: string;
  /**
   * Ask the carrier to tell a human from an answering machine, without delaying the call (the result is posted
   * to `machineDetectionUrl` once known, read with `parseMachineDetection`).
   */
  machineDetection?: boolean;
  machineDetectionUrl?: string;
  /** Seconds to let the callee's phone ring before giving up (`no_answer`). */
  timeoutSeconds?: number;
  /** The agent placing the call, for carriers that show it to the callee (the dev phone); phone carriers ignore it. */
  agentId?: string;
}

export interface PlacedCall {
  /** The adapter's name, e.g. `twilio`. */
  carrier: string;
  /** The carrier's id of the call (Twilio: the `CA…` call sid). */
  carrierCallId: string;
  status: CarrierCallStatus;
}

export interface CarrierStatusUpdate {
  carrierCallId: string;
  status: CarrierCallStatus;
  /** Length of the call in seconds, once it is over (when the carrier reports it). */
  durationSeconds?: number;
  /** Who answered, when machine detection was asked for. */
  answeredBy?: 'human' | 'machine' | 'unknown';
  /** When the carrier says the change happened (the time of parsing when it does not say). */
  at: Date;
}

export interface TransferOptions {
  resultUrl?: string;
  /** Seconds to let the other party ring. */
  timeoutSeconds?: number;
}

/** How a transfer went: `answered` (the parties talked; now over) or why the other party never came on. */
export interface TransferResult {
  carrierCallId: string;
  outcome: 'answered' | 'no_answer' | 'busy' | 'failed' | 'canceled';
}

/** Who answered, as the carrier's machine detection judged it. */
export interface MachineDetection {
  carrierCallId: string;
  answeredBy: 'human' | 'machine' | 'unknown';
}

export interface InboundCall {
  carrierCallId: string;
  from: string;
  to: string;
}

/** A carrier webhook as received: the full public URL the carrier posted to, the headers and the form fields. */
export interface CarrierWebhookRequest {
  url: string;
  headers: Record<string, string | string[] | undefined>;
  params: Record<string, string>;
}

/** What to answer an inbound call webhook with. */
export interface CarrierMarkup {
  contentType: string;
  body: string;
}

export interface CarrierAdapter {
  /** Short stable name, e.g. `twilio` (stored with the call as PlacedCall.carrier). */
  readonly name: string;
  /** Starts an outbound call whose audio is streamed to `streamUrl`. Fails with a CarrierError. */
  placeCall(req: PlaceCallRequest): Promise<PlacedCall>;
  /** Hangs the call up. Fails with a CarrierError. */
  endCall(carrierCallId: string): Promise<void>;
  /**
   * The call's current state, read from the carrier's API (what a status callback would have said), for
   * reconciling a call whose callback was missed. Fails with a CarrierError (`not_found`: no such call).
   */
  fetchCall(carrierCallId: string): Promise<CarrierStatusUpdate>;
  /**
   * Sends the call on to another party: an E.164 number or a `sip:` URI. With `resultUrl`, the carrier posts how
   * the transfer went there once the other party's leg is over (read with `parseTransferResult`) and the call
   * continues with the markup answered. Fails with a CarrierError.
   */
  transferCall(carrierCallId: string, destination: string, options?: TransferOptions): Promise<void>;
  /** Reads a transfer-result webhook. Throws a CarrierError (`invalid_request`) on missing fields. */
  parseTransferResult(params: Record<string, string>): TransferResult;
  /** Markup that hangs the call up (the answer to a transfer result whose call is over). */
  hangupMarkup(): CarrierMarkup;
  /** Answer for an inbound call webhook: the markup that connects the call's audio to the media stream. */
  answerInbound(params: { streamUrl: string; streamToken: string }): CarrierMarkup;
  /** Verifies a carrier webhook (signature over URL + form params); false when forged. */
  verifyWebhook(req: CarrierWebhookRequest): boolean;
  /** Reads a status-callback webhook. Throws a CarrierError (`invalid_request`) on fields it cannot read. */
  parseStatusCallback(params: Record<string, string>): CarrierStatusUpdate;
  /** Reads an inbound-call webhook. Throws a CarrierError (`invalid_request`) on missing fields. */
  parseInbound(params: Record<string, string>): InboundCall;
  /** Reads a machine-detection result webhook. Throws a CarrierError (`invalid_request`) on missing fields. */
  parseMachineDetection(params: Record<string, string>): MachineDetection;
}

/**
 * Why a carrier operation failed, in carrier-neutral terms:
 * `unauthorized` (credentials refused), `not_found` (no such call), `invalid_request` (the carrier refused the
 * request, or a webhook could not be read), `call_state` (the call is not in a state allowing it, e.g. already
 * over), `rate_limited`, `unavailable` (carrier unreachable or failing), `unknown`.
 */
export type CarrierErrorCode =
  | 'unauthorized'
  | 'not_found'
  | 'invalid_request'
  | 'call_state'
  | 'rate_limited'
  | 'unavailable'
  | 'unknown';

export class CarrierError extends Error {
  override readonly name = 'CarrierError';
  readonly code: CarrierErrorCode;
  /** The adapter's name. */
  readonly carrier: string;
  /** HTTP status of the carrier's answer, when there was one. */
  readonly status: number | undefined;
  /** The carrier's own error code (Twilio: e.g. 20003), when it gave one. */
  readonly carrierCode: number | string | undefined;

  constructor(
    message: string,
    options: { code: CarrierErrorCode; carrier: string; status?: number; carrierCode?: number | string; cause?: unknown },
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
    this.carrier = options.carrier;
    this.status = options.status;
    this.carrierCode = options.carrierCode;
  }
}

/** True for an E.164 number: `+`, then 2 to 15 digits, the first not 0. */
export function isE164(value: string): boolean {
  return /^\+[1-9]\d{1,14}$/.test(value);
}

/** True for a `sip:` or `sips:` URI. */
export function isSipUri(value: string): boolean {
  return /^sips?:\S+$/i.test(value);
}
