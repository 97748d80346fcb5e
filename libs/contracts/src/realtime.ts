/**
 * The realtime socket: how a browser (the embed client, the dev phone) talks on a call. One WebSocket on the media
 * plane, `{MEDIA_PUBLIC_URL}/realtime` for web calls, `{MEDIA_PUBLIC_URL}/streams/dev` for the dev carrier's legs;
 * every frame is a JSON text frame. The browser opens the socket and sends `start` with its token at once; the
 * worker answers `call-start`, or closes with one of REALTIME_CLOSE (the token is checked at connect: a token
 * whose window passed, that was used, forged, minted for another call, or an API key, is refused there).
 *
 * Audio travels inline: 20 ms frames of 16-bit little-endian PCM, mono, at `sample_rate` (16 kHz), base64 in
 * `audio`. The worker paces the agent's frames one per 20 ms and asks for `mark` echoes to learn what was heard.
 */

/** Sample rate of inline audio both ways. Wideband: browsers capture at 48 kHz and downsample to this. */
export const REALTIME_SAMPLE_RATE = 16_000;
/** Milliseconds of audio per frame both ways. */
export const REALTIME_FRAME_MS = 20;
/** Version of this protocol; a client sends it in `start` and the worker refuses one it does not speak. */
export const REALTIME_PROTOCOL_VERSION = 1;
/** Path of the realtime socket on MEDIA_PUBLIC_URL for web calls. */
export const REALTIME_PATH = '/realtime';
/** How long a minted browser token may wait to be redeemed (checked at connect, not for the call's length). */
export const REALTIME_TOKEN_TTL_SECONDS = 60;
/** Every realtime token starts with this, so a key (`vsk_`) is told apart and refused with its own reason. */
export const REALTIME_TOKEN_PREFIX = 'rtk_';
/** How long the worker waits for `start` after the socket opened. */
export const REALTIME_START_TIMEOUT_MS = 5_000;

/** Close codes (4000-4999 are the application's own) and the reason text sent with each. */
export const REALTIME_CLOSE = {
  /** The call ended; the reason is `call-end`'s. */
  normal: 1000,
  /** The media worker is shutting down. */
  goingAway: 1001,
  /** Unreadable frames, no `start` in time, or a protocol version the worker does not speak. */
  badRequest: 4400,
  /** Not a realtime token: forged, garbled, or an API key. */
  tokenInvalid: 4401,
  /** A genuine token for another call (or another account's call). */
  tokenForbidden: 4403,
  /** The token's window to connect passed. */
  tokenExpired: 4408,
  /** The token was redeemed already: each token opens one connection. */
  tokenUsed: 4409,
  /** The call is over (or was never placed), so there is nothing to join. */
  callOver: 4410,
  /** Anything else that went wrong on the worker. */
  internal: 1011,
} as const;
export type RealtimeCloseCode = (typeof REALTIME_CLOSE)[keyof typeof REALTIME_CLOSE];

/** Why a token was refused, as the calls service says it (AppError extra `refusal`); each has its close code. */
export type RealtimeRefusal = 'token_invalid' | 'token_forbidden' | 'token_expired' | 'token_used' | 'call_over';

export const REALTIME_REFUSAL_CLOSE: Record<RealtimeRefusal, RealtimeCloseCode> = {
  token_invalid: REALTIME_CLOSE.tokenInvalid,
  token_forbidden: REALTIME_CLOSE.tokenForbidden,
  token_expired: REALTIME_CLOSE.tokenExpired,
  token_used: REALTIME_CLOSE.tokenUsed,
  call_over: REALTIME_CLOSE.callOver,
};

/**
 * Who a token lets in: the person placing a web call, the person answering a dev-carrier call, one end of a
 * rendezvous (`seat`, the seat's name in the claims), the person who claimed a phone call (`operator`: the caller's
 * audio both ways, DTMF, hang-up, transfer), or an operator console (`console`: no call; it authenticates the
 * ringing stream and claims over HTTP, never the realtime socket).
 */
export type RealtimeRole = 'caller' | 'callee' | 'seat' | 'operator' | 'console';

/** A console token's window when the mint names none, and the longest it may ask for (seconds). */
export const CONSOLE_TOKEN_TTL_SECONDS = 15 * 60;
export const CONSOLE_TOKEN_MAX_TTL_SECONDS = 60 * 60;
/** The absolute end of a console session, from its first mint: refreshing never reaches past it. */
export const CONSOLE_SESSION_MAX_SECONDS = 12 * 60 * 60;
/** A claimed call whose operator never connected ends `no_answer` this long after the claim's token window. */
export const OPERATOR_JOIN_GRACE_SECONDS = 5;

/** A rendezvous seat's name: what `POST /v1/calls/rendezvous` accepts, and its default pair. */
export const SEAT_NAME = /^[a-z0-9_-]{1,40}$/;
export const DEFAULT_SEATS = ['a', 'b'] as const;
/** The largest `signal` payload relayed between seats (its JSON): an SDP with many candidates fits well within. */
export const REALTIME_SIGNAL_MAX_BYTES = 64 * 1024;

/** What a realtime token says (signed; carries no secret). */
export interface RealtimeTokenClaims {
  /** Unique per token: a token is redeemed once. */
  jti: string;
  account_id: string;
  /** Empty on a console token (it joins no call). */
  call_id: string;
  role: RealtimeRole;
  /** The seat of a rendezvous this token takes (role `seat`). */
  seat?: string;
  /** Who holds a console or operator token (recorded as the call's claimed_by). */
  operator?: string;
  /** A console token's session end (epoch seconds): refreshes keep it. */
  session_exp?: number;
}

/** Browser → worker. */
export type RealtimeClientMessage =
  | {
      type: 'start';
      token: string;
      /** REALTIME_PROTOCOL_VERSION. */
      version: number;
      /** The call the client means to join, when it knows it: a token for another call is refused (4403). */
      call_id?: string;
      /** What the client runs, for logs (`parley-browser/1.0.0`). */
      client?: string;
    }
  /** One frame of the microphone; `seq` counts frames from 0 (a gap is silence on the recording). */
  | { type: 'audio'; seq: number; audio: string }
  /** A keypress: 0-9, *, #, A-D. */
  | { type: 'dtmf'; digit: string }
  /** Echo of a worker `mark`, once the audio before it has played (or was dropped by `clear`). */
  | { type: 'mark'; name: string }
  /** The person hangs up: the call ends `completed`. */
  | { type: 'hangup' }
  /** An operator puts the phone call through to `destination` (E.164 or sip: URI); their socket then ends. */
  | { type: 'transfer'; destination: string }
  /**
   * Rendezvous: peer-connection signalling (an SDP offer or answer, an ICE candidate) for the other seat, relayed
   * as it is, in order; opaque to the server and at most REALTIME_SIGNAL_MAX_BYTES.
   */
  | { type: 'signal'; data: Record<string, unknown> };

/** Worker → browser. */
export type RealtimeServerMessage =
  | {
      type: 'call-start';
      call_id: string;
      agent_id: string;
      direction: string;
      sample_rate: number;
      frame_ms: number;
      /**
       * A rendezvous seat whose agent records or transcribes calls: send a copy of the microphone as `audio` frames
       * (as on a web call) besides the peer connection. Absent: send none.
       */
      copy?: boolean;
    }
  /** One frame of the agent (or the far end), to play in order. */
  | { type: 'audio'; audio: string }
  /** Echo it once everything received before it has played. */
  | { type: 'mark'; name: string }
  /** Drop every frame not yet played (the caller barged in), then echo pending marks. */
  | { type: 'clear' }
  /** A finished turn, as stored on the transcript. */
  | { type: 'transcript'; role: 'user' | 'assistant'; text: string; language: string; start_ms: number; end_ms: number; interrupted: boolean }
  /** The call ended; the socket closes (1000) right after. */
  | { type: 'call-end'; reason: string }
  /** Something the client sent could not be done; the call goes on. */
  | { type: 'error'; code: string; message: string }
  /**
   * Rendezvous: the other seat joined or left. `offer`: this seat makes the peer connection's offer (the seat that
   * joined second does; the other answers).
   */
  | { type: 'peer'; state: 'joined' | 'left'; seat: string; offer?: boolean }
  /** Rendezvous: the other seat's `signal`, as it sent it. */
  | { type: 'signal'; data: Record<string, unknown> };
