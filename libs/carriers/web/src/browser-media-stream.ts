import { randomUUID } from 'node:crypto';
import { MediaStreamEvent, MediaStreamProtocol, StreamNotice } from '@parley/carrier-core';
import {
  REALTIME_CLOSE,
  REALTIME_FRAME_MS,
  REALTIME_PROTOCOL_VERSION,
  REALTIME_REFUSAL_CLOSE,
  REALTIME_SAMPLE_RATE,
  REALTIME_SIGNAL_MAX_BYTES,
  REALTIME_START_TIMEOUT_MS,
  REALTIME_TOKEN_PREFIX,
  RealtimeClientMessage,
  RealtimeRefusal,
  RealtimeServerMessage,
} from '@parley/contracts';

const DIGIT = /^[0-9*#A-D]$/;
/** A close reason is at most 123 bytes (RFC 6455): the message is cut to fit. */
const MAX_REASON_BYTES = 123;

/**
 * The realtime socket's wire format (libs/contracts/src/realtime.ts) as a media stream: what a browser says and
 * hears on a call. Spoken by the embed client on web calls (`web`, the token a realtime token) and by the dev
 * phone on the dev carrier's legs (`dev`, the token the carrier's stream token), so one engine session serves both.
 */
export function browserMediaProtocol(carrier: 'web' | 'dev'): MediaStreamProtocol {
  return {
    carrier,
    startTimeoutMs: REALTIME_START_TIMEOUT_MS,
    parse: (frame) => parse(carrier, frame),
    audio: (_streamId, payload) => json({ type: 'audio', audio: payload.toString('base64') }),
    mark: (_streamId, name) => json({ type: 'mark', name }),
    clear: () => json({ type: 'clear' }),
    notice: (_streamId, notice) => json(wire(notice)),
    refusal: (refusal, message) => ({ code: closeCodeOf(refusal), reason: fit(`${refusal}: ${message}`) }),
  };
}

function parse(carrier: 'web' | 'dev', frame: string): MediaStreamEvent | undefined {
  const message = JSON.parse(frame) as RealtimeClientMessage;
  switch (message?.type) {
    case 'start': {
      if (message.version !== REALTIME_PROTOCOL_VERSION) {
        return { type: 'refuse', refusal: 'bad_request', message: `protocol version ${String(message.version)} is not spoken here (${REALTIME_PROTOCOL_VERSION} is)` };
      }
      const token = typeof message.token === 'string' ? message.token : '';
      // An API key never travels further than this: refused here, never sent on to the calls service or logged.
      if (token.startsWith('vsk_')) return { type: 'refuse', refusal: 'token_invalid', message: 'an API key is never accepted here; mint a realtime token on your server' };
      if (carrier === 'web' && !token.startsWith(REALTIME_TOKEN_PREFIX)) return { type: 'refuse', refusal: 'token_invalid', message: 'not a realtime token' };
      return {
        type: 'start',
        // One stream per redeemed token: its reports are numbered under an id of its own.
        streamId: randomUUID(),
        // A web client may name the call it means to join; the dev phone's leg is known by its token alone.
        carrierCallId: carrier === 'web' && typeof message.call_id === 'string' ? message.call_id : '',
        // The client's name and version go to the worker's log with the attached stream.
        parameters: { token, ...(typeof message.client === 'string' ? { client: message.client.slice(0, 100) } : {}) },
        format: { encoding: 'pcm16', sampleRate: REALTIME_SAMPLE_RATE, channels: 1 },
      };
    }
    case 'audio':
      if (typeof message.audio !== 'string' || !Number.isInteger(message.seq) || message.seq < 0) throw new Error('audio needs `audio` (base64) and `seq`');
      return { type: 'audio', payload: Buffer.from(message.audio, 'base64'), timestampMs: message.seq * REALTIME_FRAME_MS };
    case 'dtmf':
      if (typeof message.digit !== 'string' || !DIGIT.test(message.digit)) throw new Error('dtmf needs one `digit` of 0-9, *, #, A-D');
      return { type: 'dtmf', digit: message.digit };
    case 'mark':
      return typeof message.name === 'string' ? { type: 'mark', name: message.name } : undefined;
    case 'hangup':
      return { type: 'stop' };
    case 'signal':
      if (typeof message.data !== 'object' || message.data === null || Array.isArray(message.data)) throw new Error('signal needs `data` (an object)');
      if (Buffer.byteLength(frame) > REALTIME_SIGNAL_MAX_BYTES) throw new Error(`signal larger than ${REALTIME_SIGNAL_MAX_BYTES} bytes`);
      return { type: 'signal', data: message.data };
    case 'transfer':
      if (typeof message.destination !== 'string' || !message.destination.trim()) throw new Error('transfer needs `destination` (E.164 or sip: URI)');
      return { type: 'transfer', destination: message.destination.trim() };
    default:
      return undefined;
  }
}

function wire(notice: StreamNotice): RealtimeServerMessage {
  switch (notice.type) {
    case 'call-start':
      return {
        type: 'call-start',
        call_id: notice.callId,
        agent_id: notice.agentId,
        direction: notice.direction,
        sample_rate: notice.sampleRate,
        frame_ms: REALTIME_FRAME_MS,
        ...(notice.copy ? { copy: true } : {}),
      };
    case 'transcript':
      return {
        type: 'transcript',
        role: notice.role,
        text: notice.text,
        language: notice.language,
        start_ms: notice.startMs,
        end_ms: notice.endMs,
        interrupted: notice.interrupted,
      };
    case 'call-end':
      return { type: 'call-end', reason: notice.reason };
    case 'peer':
      return { type: 'peer', state: notice.state, seat: notice.seat, ...(notice.offer ? { offer: true } : {}) };
    case 'signal':
      return { type: 'signal', data: notice.data };
    case 'error':
      return { type: 'error', code: notice.code, message: notice.message };
  }
}

function closeCodeOf(refusal: string): number {
  if (refusal === 'bad_request') return REALTIME_CLOSE.badRequest;
  return REALTIME_REFUSAL_CLOSE[refusal as RealtimeRefusal] ?? REALTIME_CLOSE.tokenInvalid;
}

function fit(reason: string): string {
  let text = reason;
  while (Buffer.byteLength(text) > MAX_REASON_BYTES) text = text.slice(0, -1);
  return text;
}

function json(message: RealtimeServerMessage): string {
  return JSON.stringify(message);
}
