import { createHash, randomUUID } from 'node:crypto';
import { createServer, IncomingHttpHeaders, IncomingMessage, Server, STATUS_CODES } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { RawData, WebSocket, WebSocketServer } from 'ws';
import { EnergySpeechDetector, EnergySpeechDetectorOptions, SpeechSegment } from '../fake-stt';

export interface FakeDeepgramServerOptions {
  /** The key clients must send as `Authorization: Token <key>`. Default `fake-deepgram-key`. */
  apiKey?: string;
  /** Speech detection in the received audio (as the fake's endpointing). */
  detector?: EnergySpeechDetectorOptions;
  /**
   * Close a connection that sends neither audio nor a message for this long, as Deepgram does after 10 s
   * (NET-0001). Default: never.
   */
  idleTimeoutMs?: number;
}

/** A control message received (`KeepAlive`, `Finalize`, `CloseStream`, or anything else a client sent as text). */
export interface FakeDeepgramControlMessage {
  type: string;
  [key: string]: unknown;
}

/** A scripted transcript with the languages Deepgram detected in it (`channel.alternatives[0].languages`). */
export interface FakeDeepgramUtterance {
  text: string;
  languages?: string[];
}

/** One live connection the server accepted. */
export interface FakeDeepgramConnection {
  /** Path and query as requested. */
  url: string;
  /** The query parameters (`model`, `encoding`, `sample_rate`, …). */
  params: Record<string, string>;
  headers: IncomingHttpHeaders;
  requestId: string;
  controlMessages: FakeDeepgramControlMessage[];
  /** Bytes of binary audio received. */
  audioBytes: number;
  /** The size in bytes of each binary audio message, in order. */
  audioMessages: number[];
  /** Every JSON message sent to the client, in order. */
  sent: Array<Record<string, unknown>>;
  /** Close code once closed (either side). */
  closeCode: number | undefined;
}

const LISTEN_PATH = '/v1/listen';
const NET_0001 = 'Deepgram did not receive audio data or a text message within the timeout window. See https://dpgr.am/net0001';

/**
 * A real WebSocket server on 127.0.0.1 (random port) speaking Deepgram's live transcription protocol at
 * `/v1/listen`, so tests run the real `@deepgram/sdk` end to end. It checks `Authorization: Token <key>` at the
 * upgrade (401 otherwise), reads the query, takes binary linear16 audio and finds speech in it by energy. When a
 * speech segment ends (quiet after speech, as endpointing) it answers an interim `Results`, then a final one
 * (`is_final`, `speech_final`) with the next scripted utterance, then `UtteranceEnd` (with `utterance_end_ms`). A
 * `Finalize` settles the segment in progress the same way but, like Deepgram, with `from_finalize: true` and
 * `speech_final: false`; with no speech it answers an empty `from_finalize` result. `CloseStream` gets `Metadata`
 * and a 1000 close.
 */
export class FakeDeepgramServer {
  /** Every connection accepted, in order. */
  readonly connections: FakeDeepgramConnection[] = [];
  /** Upgrade attempts refused (status per attempt). */
  readonly refused: number[] = [];
  /** Answer `Finalize` (default). Off: stay silent, as Deepgram may when it holds no audio. */
  answerFinalize = true;
  private readonly apiKey: string;
  private readonly options: FakeDeepgramServerOptions;
  private readonly server: Server;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly sockets = new Set<Socket>();
  private readonly live = new Map<WebSocket, LiveSession>();
  private readonly texts: FakeDeepgramUtterance[] = [];
  private failStatus: number | undefined;
  private base: string | undefined;

  constructor(options: FakeDeepgramServerOptions = {}) {
    this.options = options;
    this.apiKey = options.apiKey ?? 'fake-deepgram-key';
    this.server = createServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ err_code: 'NOT_FOUND', err_msg: 'Use a WebSocket upgrade.' }));
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    this.server.on('upgrade', (req, socket, head) => this.upgrade(req, socket, head));
  }

  /** Starts listening; resolves to the base URL to give a client, e.g. `ws://127.0.0.1:40123`. */
  async start(): Promise<string> {
    if (this.base) return this.base;
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const { port } = this.server.address() as AddressInfo;
    this.base = `ws://127.0.0.1:${port}`;
    return this.base;
  }

  /** Stops the server, cutting every connection. */
  async stop(): Promise<void> {
    if (!this.base) return;
    this.base = undefined;
    for (const session of this.live.values()) session.dispose();
    for (const ws of this.wss.clients) ws.terminate();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
    this.wss.close();
  }

  /**
   * Appends utterances, transcribed one per detected (or finalized) speech segment; an utterance given with
   * `languages` carries them in its results, as Deepgram's `multi` language detection does.
   */
  utterances(...texts: Array<string | FakeDeepgramUtterance>): this {
    this.texts.push(...texts.map((t) => (typeof t === 'string' ? { text: t } : t)));
    return this;
  }

  /** Answers the next upgrade with this HTTP status instead of accepting it. */
  failNextConnection(status: number): this {
    this.failStatus = status;
    return this;
  }

  /** Cuts every open connection abruptly (no close frame: the client sees 1006). */
  dropConnection(): void {
    for (const session of this.live.values()) session.dispose();
    for (const ws of this.wss.clients) ws.terminate();
  }

  /** Sends a raw JSON message to every open connection (for shapes the scripted flow does not produce). */
  sendToClients(message: Record<string, unknown>): void {
    for (const session of this.live.values()) session.send(message);
  }

  /** The latest connection. */
  get lastConnection(): FakeDeepgramConnection | undefined {
    return this.connections[this.connections.length - 1];
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const refuse = (status: number, errCode: string, message: string) => {
      this.refused.push(status);
      const body = JSON.stringify({ err_code: errCode, err_msg: message, request_id: randomUUID() });
      socket.end(
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: application/json\r\n` +
          `dg-error: ${message}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    };
    if (url.pathname !== LISTEN_PATH) return refuse(404, 'NOT_FOUND', `Unknown path ${url.pathname}`);
    if (this.failStatus !== undefined) {
      const status = this.failStatus;
      this.failStatus = undefined;
      return refuse(status, 'FAKE_FAILURE', 'Scripted failure');
    }
    if (req.headers.authorization !== `Token ${this.apiKey}`) {
      return refuse(401, 'INVALID_AUTH', 'Invalid credentials.');
    }
    const params = Object.fromEntries(url.searchParams.entries());
    if (params.encoding && params.encoding !== 'linear16') {
      return refuse(400, 'UNSUPPORTED_ENCODING', `The fake only decodes linear16, not ${params.encoding}.`);
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const connection: FakeDeepgramConnection = {
        url: req.url ?? LISTEN_PATH,
        params,
        headers: req.headers,
        requestId: randomUUID(),
        controlMessages: [],
        audioBytes: 0,
        audioMessages: [],
        sent: [],
        closeCode: undefined,
      };
      this.connections.push(connection);
      const session = new LiveSession(ws, connection, this.options, () => this.texts.shift() ?? { text: '' }, this);
      this.live.set(ws, session);
      ws.on('close', (code) => {
        connection.closeCode = code;
        session.dispose();
        this.live.delete(ws);
      });
    });
  }
}

/** The server side of one live connection. */
class LiveSession {
  private readonly sampleRate: number;
  private readonly detector: EnergySpeechDetector;
  private readonly model: string;
  private idleTimer: NodeJS.Timeout | undefined;
  private carry: Buffer | undefined;
  private closing = false;

  constructor(
    private readonly ws: WebSocket,
    private readonly connection: FakeDeepgramConnection,
    private readonly options: FakeDeepgramServerOptions,
    private readonly nextText: () => FakeDeepgramUtterance,
    private readonly server: FakeDeepgramServer,
  ) {
    const { params } = connection;
    this.sampleRate = Number(params.sample_rate) > 0 ? Number(params.sample_rate) : 16_000;
    this.model = params.model ?? 'base';
    this.detector = new EnergySpeechDetector(this.sampleRate, options.detector);
    ws.on('message', (data, isBinary) => this.receive(data, isBinary));
    this.touch();
  }

  dispose(): void {
    clearTimeout(this.idleTimer);
  }

  private receive(data: RawData, isBinary: boolean): void {
    if (this.closing) return;
    this.touch();
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    if (isBinary) return this.audio(bytes);
    let message: FakeDeepgramControlMessage;
    try {
      message = JSON.parse(bytes.toString('utf8')) as FakeDeepgramControlMessage;
    } catch {
      return this.fail(1008, 'DATA-0000: text messages must be JSON control messages');
    }
    this.connection.controlMessages.push(message);
    if (message.type === 'Finalize') this.finalize();
    else if (message.type === 'CloseStream') this.closeStream();
  }

  private audio(bytes: Buffer): void {
    this.connection.audioBytes += bytes.length;
    this.connection.audioMessages.push(bytes.length);
    // Samples may straddle messages.
    const all = this.carry ? Buffer.concat([this.carry, bytes]) : bytes;
    const usable = all.length - (all.length % 2);
    this.carry = usable < all.length ? all.subarray(usable) : undefined;
    const samples = new Int16Array(usable / 2);
    for (let i = 0; i < samples.length; i++) samples[i] = all.readInt16LE(i * 2);
    const ended = this.detector.push(samples, (startMs) => {
      if (this.connection.params.vad_events === 'true') {
        this.send({ type: 'SpeechStarted', channel: [0], timestamp: startMs / 1000 });
      }
    });
    for (const segment of ended) this.transcribe(segment, false);
  }

  private finalize(): void {
    if (!this.server.answerFinalize) return;
    const segment = this.detector.flush();
    if (segment) this.transcribe(segment, true);
    else this.send(results('', { startMs: this.detector.timeMs, endMs: this.detector.timeMs }, this.meta(), { isFinal: true, fromFinalize: true }));
  }

  /** Interim, final and UtteranceEnd for one segment. */
  private transcribe(segment: SpeechSegment, fromFinalize: boolean): void {
    const { text, languages } = this.nextText();
    this.send(results(text, segment, this.meta(), { isFinal: false, languages }));
    this.send(results(text, segment, this.meta(), { isFinal: true, speechFinal: !fromFinalize, fromFinalize, languages }));
    if (this.connection.params.utterance_end_ms && text) {
      this.send({ type: 'UtteranceEnd', channel: [0, 1], last_word_end: round(segment.endMs / 1000) });
    }
  }

  private closeStream(): void {
    this.closing = true;
    const durationS = round(this.detector.timeMs / 1000);
    this.send({
      type: 'Metadata',
      transaction_key: 'deprecated',
      request_id: this.connection.requestId,
      sha256: createHash('sha256').update(this.connection.requestId).digest('hex'),
      created: new Date().toISOString(),
      duration: durationS,
      channels: Number(this.connection.params.channels ?? 1),
      models: [this.meta().model_uuid],
      model_info: { [this.meta().model_uuid]: this.meta().model_info },
    });
    this.ws.close(1000);
  }

  private fail(code: number, reason: string): void {
    this.closing = true;
    this.ws.close(code, reason);
  }

  private touch(): void {
    const timeout = this.options.idleTimeoutMs;
    if (timeout === undefined) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.fail(1011, NET_0001), timeout);
    this.idleTimer.unref();
  }

  private meta() {
    return {
      request_id: this.connection.requestId,
      model_info: { name: `general-${this.model}`, version: '2024-01-01.0', arch: this.model },
      model_uuid: '00000000-0000-4000-8000-000000000000',
    };
  }

  send(message: Record<string, unknown>): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    this.connection.sent.push(message);
    this.ws.send(JSON.stringify(message));
  }
}

function results(
  text: string,
  segment: SpeechSegment,
  metadata: Record<string, unknown>,
  flags: { isFinal: boolean; speechFinal?: boolean; fromFinalize?: boolean; languages?: string[] },
): Record<string, unknown> {
  const start = segment.startMs / 1000;
  const duration = Math.max(0, (segment.endMs - segment.startMs) / 1000);
  const words = text.split(/\s+/).filter(Boolean);
  const step = words.length > 0 ? duration / words.length : 0;
  return {
    type: 'Results',
    channel_index: [0, 1],
    duration: round(duration),
    start: round(start),
    is_final: flags.isFinal,
    speech_final: flags.speechFinal ?? false,
    channel: {
      alternatives: [
        {
          transcript: text,
          confidence: text ? 0.98 : 0,
          words: words.map((w, i) => ({
            word: w.toLowerCase().replace(/[^\p{L}\p{N}']/gu, ''),
            start: round(start + i * step),
            end: round(start + (i + 1) * step),
            confidence: 0.98,
            punctuated_word: w,
          })),
          ...(flags.languages ? { languages: flags.languages } : {}),
        },
      ],
    },
    metadata,
    from_finalize: flags.fromFinalize ?? false,
  };
}

function round(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}
