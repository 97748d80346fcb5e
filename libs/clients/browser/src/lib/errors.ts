import { REALTIME_CLOSE, REALTIME_REFUSAL_CLOSE, RealtimeRefusal } from '@parley/contracts/realtime';

/**
 * Codes of the client's errors (`error` events, rejected `start()`, thrown by `sendDigits`); `call-end`'s reason is
 * the same code when the call ended on one of them.
 */
export type ParleyErrorCode =
  /** Plain http (other than localhost): browsers give no microphone there. */
  | 'insecure_context'
  /** The person (or the browser's settings, or a permissions policy) refused the microphone. */
  | 'microphone_denied'
  /** No microphone, or it is in use by another program. */
  | 'microphone_unavailable'
  /** No WebSocket, Web Audio or AudioWorklet in this browser (RTCPeerConnection, for a rendezvous seat). */
  | 'unsupported_browser'
  /** Refusals at connect, each its close code (REALTIME_CLOSE). */
  | RealtimeRefusal
  /** The worker could not read what the client sent (4400). */
  | 'protocol_error'
  /** The media worker is shutting down (1001). */
  | 'shutdown'
  /** The media worker failed (1011). */
  | 'server_error'
  /** The socket could not be opened, or closed without a reason (network lost, proxy timeout). */
  | 'connection_lost'
  /** No `call-start` within CONNECT_TIMEOUT_MS of opening the socket. */
  | 'timeout'
  /** `sendDigits` was given something other than 0-9, *, #, A-D. */
  | 'invalid_digits'
  /** `transfer` was given something other than an E.164 number or a sip: URI. */
  | 'invalid_destination'
  /** `sendDigits` before `call-start` or after `call-end`. */
  | 'not_in_call'
  /** `start()` after the call ended (or was hung up before it started). */
  | 'call_ended'
  /** A rendezvous seat's peer connection could not be negotiated (a description or candidate was refused). */
  | 'peer_failed'
  /** A rendezvous seat could not send the copy of its microphone the worker asked for (the call goes on, unrecorded). */
  | 'copy_failed';

export class ParleyError extends Error {
  override readonly name = 'ParleyError';

  constructor(
    readonly code: ParleyErrorCode,
    message: string,
  ) {
    super(message);
  }
}

const REFUSED_BY_CODE = new Map<number, RealtimeRefusal>(
  Object.entries(REALTIME_REFUSAL_CLOSE).map(([refusal, code]) => [code, refusal as RealtimeRefusal]),
);

const OTHER_CLOSES: Record<number, { code: ParleyErrorCode; message: string }> = {
  [REALTIME_CLOSE.badRequest]: { code: 'protocol_error', message: 'The media worker could not read what this client sent.' },
  [REALTIME_CLOSE.goingAway]: { code: 'shutdown', message: 'The media worker carrying the call is shutting down.' },
  [REALTIME_CLOSE.internal]: { code: 'server_error', message: 'The media worker failed.' },
};

const REFUSAL_MESSAGES: Record<RealtimeRefusal, string> = {
  token_invalid: 'The token is not a realtime token (forged, garbled, or an API key): mint one with POST /v1/realtime/tokens.',
  token_forbidden: 'The token was minted for another call.',
  token_expired: 'The token was not redeemed within its window: mint a new one right before connecting.',
  token_used: 'The token was redeemed already: each token opens one connection.',
  call_over: 'The call is over, so there is nothing to join.',
};

/**
 * Why the socket closed, as an error; undefined for a normal close (1000), whose reason is `call-end`'s. The
 * worker's own close reason text, when it sent one, is the message.
 */
export function closeError(code: number, reason: string): ParleyError | undefined {
  if (code === REALTIME_CLOSE.normal) return undefined;
  const refusal = REFUSED_BY_CODE.get(code);
  if (refusal) return new ParleyError(refusal, reason || REFUSAL_MESSAGES[refusal]);
  const known = OTHER_CLOSES[code];
  if (known) return new ParleyError(known.code, reason || known.message);
  return new ParleyError('connection_lost', reason || `The connection to the media worker was lost (close code ${code}).`);
}

/** getUserMedia's failures (DOMException names) as the client's codes. */
export function microphoneError(error: unknown): ParleyError {
  const name = (error as { name?: string } | undefined)?.name;
  if (name === 'NotAllowedError' || name === 'SecurityError') {
    return new ParleyError('microphone_denied', 'Microphone access was denied: allow it for this site in the browser and try again.');
  }
  return new ParleyError('microphone_unavailable', `No usable microphone${name ? ` (${name})` : ''}: connect one or close the program using it.`);
}
