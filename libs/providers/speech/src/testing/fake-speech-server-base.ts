import { pcm16ToBytes } from '@parley/audio';
import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { FAKE_TTS_MS_PER_CHAR, fakeSpeechPcm } from '../fake-tts';

export interface FakeSpeechServerOptions {
  /** The key requests must carry (in the vendor's header). Default `test-key`. */
  apiKey?: string;
  /** Audio length per character of text (the audio is {@link fakeSpeechPcm}'s tone). Default 50 ms. */
  msPerChar?: number;
  /** Audio per write. Default 100 ms. */
  chunkMs?: number;
  /** Exact bytes per write, overriding `chunkMs` (an odd number splits samples across writes). */
  chunkBytes?: number;
  /** Wait before the response headers and first audio (time to first byte). Default 0. */
  firstByteDelayMs?: number;
  /** Wait between writes. Default 0. */
  chunkIntervalMs?: number;
}

/** How an answer ended: `closed` = the client went away before the last byte. */
export type FakeSpeechOutcome = 'streaming' | 'completed' | 'closed' | 'error';

/** One request the server received on a vendor route. */
export interface FakeSpeechServerRequest {
  /** `performance.now()` when the request arrived (scenario tests compare it with other events of the process). */
  receivedAt: number;
  method: string;
  /** The path without the query. */
  path: string;
  query: Record<string, string>;
  /** Header names in lower case. */
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (undefined if it was not JSON). */
  body: Record<string, unknown> | undefined;
  /** The status answered (0 until the headers are sent). */
  status: number;
  /** Audio bytes written so far. */
  bytesSent: number;
  outcome: FakeSpeechOutcome;
  /** Settles when the answer is over, with its final outcome. */
  finished: Promise<Exclude<FakeSpeechOutcome, 'streaming'>>;
}

/** What a vendor route answers: an error (status and the vendor's JSON error body), or audio to stream. */
export type FakeSpeechAnswer =
  | { status: number; body: unknown }
  | { audio: { pcm: Int16Array; sampleRate: number; contentType: string; prefix?: Buffer } };

/**
 * The HTTP plumbing shared by the fake vendor servers: a real server on 127.0.0.1 (random port), request records,
 * scripted failures, and PCM streamed with chunked transfer encoding at a configurable pace.
 */
export abstract class FakeSpeechServer {
  /** Every request to a vendor route, in order. */
  readonly requests: FakeSpeechServerRequest[] = [];
  protected readonly options: Required<Omit<FakeSpeechServerOptions, 'chunkBytes'>> & { chunkBytes?: number };
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly failures: Array<{ status: number; message?: string }> = [];
  private base: string | undefined;

  constructor(options: FakeSpeechServerOptions = {}) {
    this.options = {
      apiKey: options.apiKey ?? 'test-key',
      msPerChar: options.msPerChar ?? FAKE_TTS_MS_PER_CHAR,
      chunkMs: options.chunkMs ?? 100,
      chunkBytes: options.chunkBytes,
      firstByteDelayMs: options.firstByteDelayMs ?? 0,
      chunkIntervalMs: options.chunkIntervalMs ?? 0,
    };
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) this.sendJson(res, 500, this.errorBody(500, `fake server failure: ${String(error)}`));
        else res.destroy();
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** Starts listening; resolves to the base URL to give the vendor SDK. */
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
    this.base = this.baseUrlFor(`http://127.0.0.1:${port}`);
    return this.base;
  }

  /** The base URL (after `start()`). */
  get baseUrl(): string {
    if (!this.base) throw new Error(`${this.constructor.name}: not started`);
    return this.base;
  }

  /** Stops the server, cutting open connections (answers still streaming included). */
  async stop(): Promise<void> {
    if (!this.base) return;
    this.base = undefined;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  /** Changes pacing, chunking or audio length for later requests. */
  configure(options: Omit<FakeSpeechServerOptions, 'apiKey'>): this {
    Object.assign(this.options, options);
    return this;
  }

  /** The next authorised request is answered `status` with the vendor's error body. Calls queue up. */
  failNext(status: number, message?: string): this {
    this.failures.push({ status, message });
    return this;
  }

  /** The base URL clients are given for the server's origin. */
  protected abstract baseUrlFor(origin: string): string;
  /** Whether the route is one of the vendor's (others answer 404). */
  protected abstract isRoute(method: string, path: string): boolean;
  /** The 401 answer when the key is missing or wrong, else undefined. */
  protected abstract checkAuth(headers: IncomingHttpHeaders): { status: number; body: unknown } | undefined;
  /** The vendor's error JSON for `status`. */
  protected abstract errorBody(status: number, message: string): unknown;
  /** Validates the request and says what to answer. */
  protected abstract answer(request: FakeSpeechServerRequest): FakeSpeechAnswer;

  /** The fake's audio for `text` at `sampleRate`. */
  protected speech(text: string, sampleRate: number): Int16Array {
    return fakeSpeechPcm(text, sampleRate, this.options.msPerChar);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const receivedAt = performance.now();
    const raw = await readBody(req);
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://fake');
    if (!this.isRoute(method, url.pathname)) {
      return this.sendJson(res, 404, this.errorBody(404, `Unknown request URL: ${method} ${url.pathname}`));
    }

    let resolveFinished!: (outcome: Exclude<FakeSpeechOutcome, 'streaming'>) => void;
    const record: FakeSpeechServerRequest = {
      receivedAt,
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body: parseJsonObject(raw),
      status: 0,
      bytesSent: 0,
      outcome: 'streaming',
      finished: new Promise((resolve) => (resolveFinished = resolve)),
    };
    this.requests.push(record);
    const finish = (outcome: Exclude<FakeSpeechOutcome, 'streaming'>) => {
      if (record.outcome !== 'streaming') return;
      record.outcome = outcome;
      resolveFinished(outcome);
    };
    res.on('close', () => finish(res.writableFinished ? (record.status >= 400 ? 'error' : 'completed') : 'closed'));

    const failure = this.checkAuth(req.headers) ?? this.takeFailure();
    const answer = failure ?? this.answer(record);
    if ('status' in answer) {
      record.status = answer.status;
      return this.sendJson(res, answer.status, answer.body);
    }

    const { pcm, sampleRate, contentType, prefix } = answer.audio;
    const bytes = prefix ? Buffer.concat([prefix, pcm16ToBytes(pcm)]) : pcm16ToBytes(pcm);
    const chunkBytes = this.options.chunkBytes ?? Math.max(2, 2 * Math.round((this.options.chunkMs * sampleRate) / 1000));
    await waitUnlessClosed(this.options.firstByteDelayMs, res);
    if (record.outcome !== 'streaming') return;
    record.status = 200;
    // No content-length: chunked transfer encoding, as the vendors stream.
    res.writeHead(200, { 'content-type': contentType, 'request-id': `fake-${this.requests.length}` });
    for (let at = 0; at < bytes.length; at += chunkBytes) {
      if (at > 0) await waitUnlessClosed(this.options.chunkIntervalMs, res);
      if (record.outcome !== 'streaming') return;
      const piece = bytes.subarray(at, at + chunkBytes);
      res.write(piece);
      record.bytesSent += piece.length;
    }
    res.end();
  }

  private takeFailure(): { status: number; body: unknown } | undefined {
    const failure = this.failures.shift();
    if (!failure) return undefined;
    return { status: failure.status, body: this.errorBody(failure.status, failure.message ?? `scripted failure ${failure.status}`) };
  }

  private sendJson(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }
}

function parseJsonObject(raw: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(raw);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Waits `ms`, cut short when the connection closes (so no timer outlives a test). */
function waitUnlessClosed(ms: number, res: ServerResponse): Promise<void> {
  if (ms <= 0 || res.closed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.once('close', done);
  });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
