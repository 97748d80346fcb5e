import { MediaFormat, MediaStreamEvent, MediaStreamProtocol } from '@parley/carrier-core';
import { TWILIO_CARRIER_NAME } from './twilio-carrier';

/*
 * Twilio Media Streams WebSocket messages (https://www.twilio.com/docs/voice/media-streams/websocket-messages).
 * Every numeric-looking field Twilio sends (sequenceNumber, chunk, timestamp) is a string; sampleRate and
 * channels are numbers.
 */

/** First message on the socket. */
export interface TwilioConnectedMessage {
  event: 'connected';
  protocol: string;
  version: string;
}

export interface TwilioStartMessage {
  event: 'start';
  sequenceNumber: string;
  start: {
    accountSid: string;
    streamSid: string;
    callSid: string;
    /** `inbound`, `outbound` (a `<Connect><Stream>` only has `inbound`). */
    tracks: string[];
    /** The `<Parameter name value>` children of `<Stream>`. */
    customParameters: Record<string, string>;
    mediaFormat: { encoding: string; sampleRate: number; channels: number };
  };
  streamSid: string;
}

export interface TwilioMediaMessage {
  event: 'media';
  sequenceNumber: string;
  media: {
    track: string;
    /** 1, 2, … per track. */
    chunk: string;
    /** Milliseconds since the stream started. */
    timestamp: string;
    /** Base64 of raw μ-law 8 kHz mono, no header. */
    payload: string;
  };
  streamSid: string;
}

export interface TwilioDtmfMessage {
  event: 'dtmf';
  streamSid: string;
  sequenceNumber: string;
  dtmf: { track: string; digit: string };
}

export interface TwilioMarkMessage {
  event: 'mark';
  streamSid: string;
  sequenceNumber: string;
  mark: { name: string };
}

export interface TwilioStopMessage {
  event: 'stop';
  sequenceNumber: string;
  streamSid: string;
  stop: { accountSid: string; callSid: string };
}

/** What Twilio sends on a stream. */
export type TwilioStreamMessage =
  | TwilioConnectedMessage
  | TwilioStartMessage
  | TwilioMediaMessage
  | TwilioDtmfMessage
  | TwilioMarkMessage
  | TwilioStopMessage;

/** What Twilio accepts on a bidirectional (`<Connect><Stream>`) stream. */
export type TwilioStreamCommand =
  | { event: 'media'; streamSid: string; media: { payload: string } }
  | { event: 'mark'; streamSid: string; mark: { name: string } }
  | { event: 'clear'; streamSid: string };

const TWILIO_ENCODINGS: Record<string, MediaFormat['encoding']> = { 'audio/x-mulaw': 'mulaw' };

/**
 * A media frame exactly as Twilio writes it (its key order, no spaces, no escapes): the track, the timestamp and the
 * payload. Nearly every frame on a stream is one, 50 a second per call, and this reads it in about a third of
 * JSON.parse's time. Its strings hold no quote, backslash or control character, so what it matches is JSON that
 * JSON.parse reads to the same values; a frame in any other shape takes the general path.
 */
const TWILIO_MEDIA_FRAME =
  // eslint-disable-next-line no-control-regex -- the control characters are the ones a JSON string may not hold raw
  /^\{"event":"media","sequenceNumber":"\d+","media":\{"track":"([^"\\\x00-\x1f]*)","chunk":"\d+","timestamp":"(\d+)","payload":"([^"\\\x00-\x1f]*)"\},"streamSid":"[^"\\\x00-\x1f]*"\}$/;

/** MediaStreamProtocol for Twilio Media Streams (bidirectional, `<Connect><Stream>`). */
export class TwilioMediaStreamProtocol implements MediaStreamProtocol {
  readonly carrier = TWILIO_CARRIER_NAME;

  parse(frame: string): MediaStreamEvent | undefined {
    const media = TWILIO_MEDIA_FRAME.exec(frame);
    if (media) {
      const timestampMs = Number(media[2]);
      // An unsafe timestamp takes the general path, which refuses it.
      if (Number.isSafeInteger(timestampMs)) return media[1] === 'inbound' ? { type: 'audio', payload: base64(media[3]), timestampMs } : undefined;
    }
    let message: unknown;
    try {
      message = JSON.parse(frame);
    } catch {
      throw streamError(`frame is not JSON: ${preview(frame)}`);
    }
    if (!isObject(message)) throw streamError(`frame is not a JSON object: ${preview(frame)}`);
    const event = message['event'];
    if (typeof event !== 'string') throw streamError(`frame without event: ${preview(frame)}`);

    switch (event) {
      case 'connected':
        return { type: 'connected' };
      case 'start': {
        const start = object(message, 'start', event);
        const streamId = string(start, 'streamSid', event);
        const carrierCallId = string(start, 'callSid', event);
        const format = object(start, 'mediaFormat', event);
        const encodingName = string(format, 'encoding', event);
        const encoding = Object.prototype.hasOwnProperty.call(TWILIO_ENCODINGS, encodingName)
          ? TWILIO_ENCODINGS[encodingName]
          : undefined;
        if (!encoding) throw streamError(`start with unsupported mediaFormat.encoding ${JSON.stringify(encodingName)}`);
        const sampleRate = integer(format, 'sampleRate', event, 1);
        const channels = integer(format, 'channels', event, 1);
        return {
          type: 'start',
          streamId,
          carrierCallId,
          parameters: customParameters(start['customParameters']),
          format: { encoding, sampleRate, channels },
        };
      }
      case 'media': {
        const media = object(message, 'media', event);
        const timestampMs = integer(media, 'timestamp', event, 0);
        // Only what the caller says matters; an `outbound` track (unidirectional both_tracks streams) echoes us.
        const track = media['track'];
        if (track !== undefined && track !== 'inbound') return undefined;
        return { type: 'audio', payload: base64(string(media, 'payload', event, true)), timestampMs };
      }
      case 'dtmf':
        return { type: 'dtmf', digit: string(object(message, 'dtmf', event), 'digit', event) };
      case 'mark':
        return { type: 'mark', name: string(object(message, 'mark', event), 'name', event) };
      case 'stop':
        return { type: 'stop' };
      default:
        return undefined;
    }
  }

  /** Written as a template (base64 needs no escaping): 50 a second per call while the agent speaks. */
  audio(streamId: string, payload: Buffer): string {
    return `{"event":"media","streamSid":${JSON.stringify(sid(streamId))},"media":{"payload":"${payload.toString('base64')}"}}`;
  }

  mark(streamId: string, name: string): string {
    if (!name) throw streamError('mark name is required');
    return command({ event: 'mark', streamSid: sid(streamId), mark: { name } });
  }

  clear(streamId: string): string {
    return command({ event: 'clear', streamSid: sid(streamId) });
  }
}

function command(message: TwilioStreamCommand): string {
  return JSON.stringify(message);
}

function sid(streamId: string): string {
  if (!streamId) throw streamError('streamSid is required');
  return streamId;
}

function customParameters(value: unknown): Record<string, string> {
  if (value === undefined) return {};
  if (!isObject(value)) throw streamError('start with customParameters that is not an object');
  const parameters: Record<string, string> = {};
  for (const [name, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw streamError(`start with non-string customParameters.${name}`);
    parameters[name] = v;
  }
  return parameters;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function object(parent: Record<string, unknown>, key: string, event: string): Record<string, unknown> {
  const value = parent[key];
  if (!isObject(value)) throw streamError(`${event} without ${key}`);
  return value;
}

function string(parent: Record<string, unknown>, key: string, event: string, allowEmpty = false): string {
  const value = parent[key];
  if (typeof value !== 'string' || (!allowEmpty && value === '')) throw streamError(`${event} without ${key}`);
  return value;
}

/** Twilio sends counters as strings ("160") and format fields as numbers; either is read. */
function integer(parent: Record<string, unknown>, key: string, event: string, min: number): number {
  const value = parent[key];
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    throw streamError(value === undefined ? `${event} without ${key}` : `${event} with invalid ${key} ${JSON.stringify(value)}`);
  }
  return n;
}

/**
 * Decodes a strict base64 payload. Node's decoder skips characters outside the alphabet, so a payload that is not
 * base64 decodes short: comparing lengths checks it at a fraction of a regular expression's cost per frame.
 */
function base64(payload: string): Buffer {
  const padding = payload.endsWith('==') ? 2 : payload.endsWith('=') ? 1 : 0;
  const bytes = Buffer.from(payload, 'base64');
  if (payload.length % 4 !== 0 || bytes.length !== (payload.length / 4) * 3 - padding) throw streamError('media payload is not base64');
  return bytes;
}

function preview(frame: string): string {
  return JSON.stringify(frame.length > 80 ? `${frame.slice(0, 80)}…` : frame);
}

function streamError(message: string): Error {
  return new Error(`twilio media stream: ${message}`);
}
