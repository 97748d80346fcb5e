import { randomBytes } from 'node:crypto';
import { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import twilio from 'twilio';
import WebSocket from 'ws';
import {
  TwilioConnectedMessage,
  TwilioDtmfMessage,
  TwilioMarkMessage,
  TwilioMediaMessage,
  TwilioStartMessage,
  TwilioStopMessage,
  TwilioStreamMessage,
} from '../twilio-media-stream';

/** μ-law at 8 kHz: 8 bytes a millisecond, Twilio frames are 20 ms. */
export const MULAW_BYTES_PER_MS = 8;
export const TWILIO_FRAME_BYTES = 160;
const FRAME_MS = TWILIO_FRAME_BYTES / MULAW_BYTES_PER_MS;
/** μ-law silence, to pad a last partial frame (Twilio only sends whole 20 ms frames). */
const MULAW_SILENCE = 0xff;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A message the stream server sent, as parsed JSON. */
export type FakeMediaStreamMessage = Record<string, unknown>;

export interface FakeMediaStreamClose {
  code: number;
  reason: string;
}

/** The `<Connect><Stream>` of a TwiML document. */
export interface ConnectStreamTwiml {
  url: string;
  /** `<Parameter name value>` children, in order (later names win). */
  parameters: Record<string, string>;
}

/**
 * Reads `<Response><Connect><Stream url="…"><Parameter name="…" value="…"/>…</Stream></Connect></Response>`;
 * undefined when the TwiML has no `<Connect><Stream url>`. A tolerant regex read, enough for the TwiML the SDK
 * writes (attributes in either quote style, XML entities decoded).
 */
export function parseConnectStreamTwiml(twiml: string): ConnectStreamTwiml | undefined {
  const connect = /<Connect\b[^>]*>([\s\S]*?)<\/Connect\s*>/.exec(twiml);
  if (!connect) return undefined;
  const stream = /<Stream\b((?:[^>"']|"[^"]*"|'[^']*')*?)(?:\/>|>([\s\S]*?)<\/Stream\s*>)/.exec(connect[1]);
  if (!stream) return undefined;
  const url = xmlAttributes(stream[1])['url'];
  if (!url) return undefined;
  const parameters: Record<string, string> = {};
  for (const match of (stream[2] ?? '').matchAll(/<Parameter\b((?:[^>"']|"[^"]*"|'[^']*')*?)\/?>/g)) {
    const { name, value } = xmlAttributes(match[1]);
    if (name !== undefined) parameters[name] = value ?? '';
  }
  return { url, parameters };
}

export interface FakeMediaStreamInit {
  url: string;
  accountSid: string;
  callSid: string;
  authToken: string;
  parameters: Record<string, string>;
  tracks?: string[];
  /** WebSocket handshake timeout. Default 10 s. */
  timeoutMs?: number;
}

/**
 * Twilio's side of one bidirectional Media Stream, over a real WebSocket to the stream server: sends what the
 * caller says (`media`, `dtmf`, `stop`) and plays what the server sends back in simulated real time, so marks
 * come back when the audio before them has played and `clear` cuts playback as Twilio does.
 */
export class FakeMediaStream {
  readonly url: string;
  readonly accountSid: string;
  readonly callSid: string;
  /** The `MZ…` sid, as in the start message. */
  readonly streamSid: string;
  readonly parameters: Record<string, string>;
  readonly tracks: string[];
  /** Every message the server sent, parsed, in order (unreadable ones are in `problems` instead). */
  readonly received: FakeMediaStreamMessage[] = [];
  /** Names of the marks sent back to the server, in order. */
  readonly marksEchoed: string[] = [];
  /** What Twilio would refuse or ignore: non-JSON or binary frames, unknown events, a wrong streamSid, bad payloads. */
  readonly problems: string[] = [];
  /** Resolves once the socket has closed (1006 when it dropped without a close frame). */
  readonly closed: Promise<FakeMediaStreamClose>;

  private readonly ws: WebSocket;
  private sequenceNumber = 0;
  private chunk = 0;
  private nextTimestamp = 0;
  private startedAt = 0;
  private clearCount = 0;
  private readonly receivedPayloads: Buffer[] = [];
  // Playback: audio segments on a wall clock (performance.now ms), truncated by `clear`.
  private readonly segments: Array<{ bytes: Buffer; startAt: number; endAt: number }> = [];
  private playEnd = 0;
  private readonly pendingMarks: Array<{ name: string; dueAt: number }> = [];
  private markTimer: NodeJS.Timeout | undefined;
  private readonly waiters = new Set<{
    predicate: (message: FakeMediaStreamMessage) => boolean;
    resolve: (message: FakeMediaStreamMessage) => void;
    reject: (error: Error) => void;
  }>();
  private closeInfo: FakeMediaStreamClose | undefined;

  /** Opens the socket and sends `connected` then `start`; rejects when the upgrade is refused or fails. */
  static async connect(init: FakeMediaStreamInit): Promise<FakeMediaStream> {
    const ws = new WebSocket(init.url, {
      // Twilio signs the upgrade like a webhook: the stream URL, no params.
      headers: { 'x-twilio-signature': twilio.getExpectedTwilioSignature(init.authToken, init.url, {}) },
      handshakeTimeout: init.timeoutMs ?? 10_000,
    });
    await new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = () => {
        settled = true;
        ws.off('open', onOpen).off('unexpected-response', onRefused).off('error', onError).off('close', onClose);
      };
      const fail = (message: string) => {
        if (settled) return;
        settle();
        ws.on('error', () => undefined); // terminate() on a CONNECTING socket emits one more error
        if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
        reject(new Error(`FakeMediaStream: ${init.url}: ${message}`));
      };
      const onOpen = () => {
        if (settled) return;
        settle();
        resolve();
      };
      const onRefused = (_req: unknown, res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8').slice(0, 200);
          fail(`upgrade refused with HTTP ${res.statusCode} ${res.statusMessage ?? ''}${body ? `: ${body}` : ''}`.trim());
        });
        res.on('error', () => fail(`upgrade refused with HTTP ${res.statusCode}`));
      };
      const onError = (error: Error) => fail(`connection failed: ${error.message}`);
      const onClose = (code: number, reason: Buffer) => fail(`closed before open: ${code} ${reason.toString()}`.trim());
      ws.on('open', onOpen).on('unexpected-response', onRefused).on('error', onError).on('close', onClose);
    });
    const stream = new FakeMediaStream(ws, init);
    stream.begin();
    return stream;
  }

  private constructor(ws: WebSocket, init: FakeMediaStreamInit) {
    this.ws = ws;
    this.url = init.url;
    this.accountSid = init.accountSid;
    this.callSid = init.callSid;
    this.streamSid = `MZ${randomBytes(16).toString('hex')}`;
    this.parameters = { ...init.parameters };
    this.tracks = init.tracks ?? ['inbound'];
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        this.closeInfo = { code, reason: reason.toString() };
        this.stopPlayback();
        for (const waiter of this.waiters) {
          waiter.reject(new Error(`FakeMediaStream: closed (${code} ${this.closeInfo.reason}) before an awaited message`));
        }
        this.waiters.clear();
        resolve(this.closeInfo);
      });
    });
    ws.on('error', (error) => this.problems.push(`socket error: ${error.message}`));
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
  }

  /** True until the socket starts closing. */
  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  /** `clear` messages received. */
  get clears(): number {
    return this.clearCount;
  }

  /** `media` messages received (cleared ones included). */
  get receivedFrames(): number {
    return this.receivedPayloads.length;
  }

  /** Every audio byte the server sent, in order (cleared audio included). */
  receivedAudio(): Buffer {
    return Buffer.concat(this.receivedPayloads);
  }

  /** The audio the caller has heard so far: received audio up to the playback clock, minus what `clear` cut. */
  playedAudio(): Buffer {
    const now = performance.now();
    return Buffer.concat(this.segments.map((s) => s.bytes.subarray(0, playedBytes(s, now))));
  }

  /**
   * Sends caller audio (μ-law 8 kHz) as 160-byte `media` frames (a short last frame padded with silence), stamped
   * 20 ms apart from the stream's start. `paced` sends them in real time; otherwise at once, still stamped as if
   * real time. Stamps continue from the previous call, or from now when real time has gone further (a pause).
   */
  async sendAudio(mulaw: Buffer, options: { paced?: boolean } = {}): Promise<void> {
    const begin = performance.now();
    let timestamp = Math.max(this.nextTimestamp, Math.floor(begin - this.startedAt));
    for (let offset = 0, i = 0; offset < mulaw.length; offset += TWILIO_FRAME_BYTES, i++) {
      if (options.paced) {
        const wait = begin + i * FRAME_MS - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      }
      let frame = mulaw.subarray(offset, offset + TWILIO_FRAME_BYTES);
      if (frame.length < TWILIO_FRAME_BYTES) {
        frame = Buffer.concat([frame, Buffer.alloc(TWILIO_FRAME_BYTES - frame.length, MULAW_SILENCE)]);
      }
      this.chunk += 1;
      const message: TwilioMediaMessage = {
        event: 'media',
        sequenceNumber: this.nextSequence(),
        media: { track: 'inbound', chunk: String(this.chunk), timestamp: String(timestamp), payload: frame.toString('base64') },
        streamSid: this.streamSid,
      };
      this.send(message);
      timestamp += FRAME_MS;
      this.nextTimestamp = timestamp;
    }
  }

  /** The caller pressed a key. */
  sendDtmf(digit: string): void {
    const message: TwilioDtmfMessage = {
      event: 'dtmf',
      streamSid: this.streamSid,
      sequenceNumber: this.nextSequence(),
      dtmf: { track: 'inbound_track', digit },
    };
    this.send(message);
  }

  /** Ends the stream as Twilio does when the call ends: `stop`, then a normal close. */
  async stop(): Promise<FakeMediaStreamClose> {
    if (this.open) {
      const message: TwilioStopMessage = {
        event: 'stop',
        sequenceNumber: this.nextSequence(),
        streamSid: this.streamSid,
        stop: { accountSid: this.accountSid, callSid: this.callSid },
      };
      this.send(message);
      this.ws.close(1000);
    }
    return this.closed;
  }

  /**
   * Closes without `stop`: by default drops the TCP connection (the server sees 1006, as on a network failure);
   * with a code, sends a close frame with it.
   */
  async close(options: { code?: number; reason?: string } = {}): Promise<FakeMediaStreamClose> {
    this.stopPlayback();
    if (options.code !== undefined) this.ws.close(options.code, options.reason);
    else this.ws.terminate();
    return this.closed;
  }

  /**
   * The first server message, already received or still to come, matching `predicate`. Rejects after `timeoutMs`
   * or when the socket closes first.
   */
  waitFor(
    predicate: (message: FakeMediaStreamMessage) => boolean,
    timeoutMs = 5_000,
  ): Promise<FakeMediaStreamMessage> {
    const found = this.received.find(predicate);
    if (found) return Promise.resolve(found);
    if (this.closeInfo) {
      return Promise.reject(new Error(`FakeMediaStream: closed (${this.closeInfo.code}) before an awaited message`));
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`FakeMediaStream: no matching message within ${timeoutMs} ms`));
      }, timeoutMs);
      const waiter = {
        predicate,
        resolve: (message: FakeMediaStreamMessage) => {
          clearTimeout(timer);
          resolve(message);
        },
        reject: (error: Error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      this.waiters.add(waiter);
    });
  }

  private begin(): void {
    const connected: TwilioConnectedMessage = { event: 'connected', protocol: 'Call', version: '1.0.0' };
    this.send(connected);
    this.startedAt = performance.now();
    const start: TwilioStartMessage = {
      event: 'start',
      sequenceNumber: this.nextSequence(),
      start: {
        accountSid: this.accountSid,
        streamSid: this.streamSid,
        callSid: this.callSid,
        tracks: [...this.tracks],
        customParameters: { ...this.parameters },
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
      streamSid: this.streamSid,
    };
    this.send(start);
  }

  // Twilio numbers every message but `connected`, from "1".
  private nextSequence(): string {
    this.sequenceNumber += 1;
    return String(this.sequenceNumber);
  }

  private send(message: TwilioStreamMessage): void {
    if (!this.open) throw new Error(`FakeMediaStream: cannot send ${message.event}, the socket is closed`);
    this.ws.send(JSON.stringify(message));
  }

  private onMessage(data: WebSocket.RawData, isBinary: boolean): void {
    if (isBinary) {
      this.problems.push('binary frame');
      return;
    }
    const text = Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(toBuffers(data)).toString('utf8');
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.problems.push(`frame is not JSON: ${text.slice(0, 80)}`);
      return;
    }
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      this.problems.push(`frame is not a JSON object: ${text.slice(0, 80)}`);
      return;
    }
    const msg = message as FakeMediaStreamMessage;
    this.received.push(msg);
    this.act(msg);
    for (const waiter of this.waiters) {
      if (waiter.predicate(msg)) {
        this.waiters.delete(waiter);
        waiter.resolve(msg);
      }
    }
  }

  private act(msg: FakeMediaStreamMessage): void {
    const event = msg['event'];
    if (event !== 'media' && event !== 'mark' && event !== 'clear') {
      this.problems.push(`unknown event ${JSON.stringify(event)}`);
      return;
    }
    if (msg['streamSid'] !== this.streamSid) {
      this.problems.push(`${event} for streamSid ${JSON.stringify(msg['streamSid'])}, not ${this.streamSid}`);
      return;
    }
    const now = performance.now();
    if (event === 'media') {
      const payload = (msg['media'] as { payload?: unknown } | undefined)?.payload;
      if (typeof payload !== 'string' || !payload || !BASE64.test(payload)) {
        this.problems.push('media without a base64 payload');
        return;
      }
      const bytes = Buffer.from(payload, 'base64');
      this.receivedPayloads.push(bytes);
      const startAt = Math.max(now, this.playEnd);
      this.playEnd = startAt + bytes.length / MULAW_BYTES_PER_MS;
      this.segments.push({ bytes, startAt, endAt: this.playEnd });
    } else if (event === 'mark') {
      const name = (msg['mark'] as { name?: unknown } | undefined)?.name;
      if (typeof name !== 'string' || !name) {
        this.problems.push('mark without a name');
        return;
      }
      this.pendingMarks.push({ name, dueAt: Math.max(now, this.playEnd) });
      this.flushMarks();
    } else {
      this.clearCount += 1;
      // Cut every segment at the playback clock; pending marks come back at once, in order.
      for (const s of this.segments) {
        if (s.endAt > now) {
          s.bytes = s.bytes.subarray(0, playedBytes(s, now));
          s.endAt = Math.min(s.endAt, now);
        }
      }
      this.playEnd = now;
      if (this.markTimer) clearTimeout(this.markTimer);
      this.markTimer = undefined;
      for (const mark of this.pendingMarks.splice(0)) this.echoMark(mark.name);
    }
  }

  // One timer for the head mark keeps echoes in order; a timer firing early (libuv's coarse clock) reschedules.
  private flushMarks(): void {
    if (this.markTimer) clearTimeout(this.markTimer);
    this.markTimer = undefined;
    const now = performance.now();
    while (this.pendingMarks.length > 0 && this.pendingMarks[0].dueAt <= now) {
      const mark = this.pendingMarks.shift();
      if (mark) this.echoMark(mark.name);
    }
    const head = this.pendingMarks[0];
    if (head) this.markTimer = setTimeout(() => this.flushMarks(), Math.max(1, Math.ceil(head.dueAt - now)));
  }

  private echoMark(name: string): void {
    if (!this.open) return;
    this.marksEchoed.push(name);
    const message: TwilioMarkMessage = {
      event: 'mark',
      sequenceNumber: this.nextSequence(),
      streamSid: this.streamSid,
      mark: { name },
    };
    this.send(message);
  }

  private stopPlayback(): void {
    if (this.markTimer) clearTimeout(this.markTimer);
    this.markTimer = undefined;
    this.pendingMarks.length = 0;
  }
}

function playedBytes(segment: { bytes: Buffer; startAt: number; endAt: number }, now: number): number {
  const elapsed = Math.min(now, segment.endAt) - segment.startAt;
  // The epsilon keeps float error (399.9999… ms) from losing the last byte of audio that has fully played.
  return Math.max(0, Math.min(segment.bytes.length, Math.floor(elapsed * MULAW_BYTES_PER_MS + 1e-3)));
}

function toBuffers(data: WebSocket.RawData): Buffer[] {
  if (Array.isArray(data)) return data;
  return [Buffer.from(data as ArrayBuffer)];
}

function xmlAttributes(source: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const match of source.matchAll(/([A-Za-z_:][\w.:-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
    attributes[match[1]] = decodeXml(match[2] ?? match[3] ?? '');
  }
  return attributes;
}

function decodeXml(text: string): string {
  return text.replace(/&(?:#x([0-9a-f]+)|#(\d+)|(amp|lt|gt|quot|apos));/gi, (entity, hex, dec, named: string | undefined) => {
    if (hex) return String.fromCodePoint(parseInt(hex, 16));
    if (dec) return String.fromCodePoint(parseInt(dec, 10));
    return ({ amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" } as Record<string, string>)[(named ?? '').toLowerCase()] ?? entity;
  });
}
