import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { parseWav } from '@parley/audio';

/** One transcription request the server received. */
export interface FakeTranscriptionRequest {
  /** Path and query, e.g. `/v1/audio/transcriptions`. */
  path: string;
  /** Header names in lower case, as node:http gives them. */
  headers: IncomingHttpHeaders;
  model: string | undefined;
  language: string | undefined;
  responseFormat: string | undefined;
  /** The uploaded file's name and content type, as the form part names them. */
  fileName: string | undefined;
  fileType: string | undefined;
  /** Bytes of the uploaded file. */
  audioBytes: number;
  /** The upload read as a WAV file, when it is one. */
  wav: { sampleRate: number; channels: number; samples: number; durationMs: number } | undefined;
  /** Every text field of the form. */
  fields: Record<string, string>;
}

export interface FakeOpenAiTranscriptionServerOptions {
  /** When set, requests must carry `Authorization: Bearer <key>` (401 otherwise). */
  apiKey?: string;
}

/**
 * A real HTTP server on 127.0.0.1 (random port) answering OpenAI's `POST /v1/audio/transcriptions` (multipart
 * form: file, model, language, response_format), so tests run the real `openai` SDK end to end. Answers come from
 * a scripted queue (`transcripts()`; an empty text once it is used up) as `{ "text": … }`, plain text for
 * `response_format=text`, or a verbose JSON; `failNext()` scripts an error status; `delayMs` slows answers.
 */
export class FakeOpenAiTranscriptionServer {
  /** Every authorised request to the route (well-formed or not), in order. */
  readonly requests: FakeTranscriptionRequest[] = [];
  /** Delay before each answer, to test deadlines. */
  delayMs = 0;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly texts: string[] = [];
  private readonly failures: number[] = [];
  private readonly apiKey: string | undefined;
  private base: string | undefined;

  constructor(options: FakeOpenAiTranscriptionServerOptions = {}) {
    this.apiKey = options.apiKey;
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) sendJson(res, 500, errorBody(`fake server failure: ${String(error)}`, 'server_error'));
        else res.destroy();
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** Starts listening; resolves to the base URL to give a client, e.g. `http://127.0.0.1:40123/v1`. */
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
    this.base = `http://127.0.0.1:${port}/v1`;
    return this.base;
  }

  /** Stops the server, cutting open connections. */
  async stop(): Promise<void> {
    if (!this.base) return;
    this.base = undefined;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  /** Appends texts, answered one per request. */
  transcripts(...texts: string[]): this {
    this.texts.push(...texts);
    return this;
  }

  /** Answers the next request with this error status instead of a text (call twice for two failures). */
  failNext(status: number): this {
    this.failures.push(status);
    return this;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const path = req.url ?? '/';
    const route = path.split('?')[0];
    if (req.method !== 'POST' || route !== '/v1/audio/transcriptions') {
      return sendJson(res, 404, errorBody(`Unknown request URL: ${req.method} ${route}.`, 'invalid_request_error'));
    }
    if (this.apiKey !== undefined && req.headers.authorization !== `Bearer ${this.apiKey}`) {
      return sendJson(res, 401, errorBody('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key'));
    }
    const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(req.headers['content-type'] ?? '');
    if (!boundary) {
      return sendJson(res, 400, errorBody('Expected a multipart/form-data body.', 'invalid_request_error'));
    }
    const parts = parseMultipart(raw, boundary[1] ?? boundary[2]);
    const fields: Record<string, string> = {};
    let file: Part | undefined;
    for (const part of parts) {
      if (part.fileName !== undefined) file = part;
      else fields[part.name] = part.body.toString('utf8');
    }
    const request: FakeTranscriptionRequest = {
      path,
      headers: req.headers,
      model: fields.model,
      language: fields.language,
      responseFormat: fields.response_format,
      fileName: file?.fileName,
      fileType: file?.contentType,
      audioBytes: file?.body.length ?? 0,
      wav: file ? readWav(file.body) : undefined,
      fields,
    };
    this.requests.push(request);
    // Scripted answers follow the order requests arrive in, whatever order they are answered in.
    const failure = this.failures.shift();
    const valid = file !== undefined && request.model !== undefined;
    const text = failure === undefined && valid ? (this.texts.shift() ?? '') : '';
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    if (res.destroyed) return;

    if (failure !== undefined) {
      return sendJson(res, failure, errorBody(`Scripted failure ${failure}`, failure >= 500 ? 'server_error' : 'invalid_request_error'));
    }
    if (!valid) {
      return sendJson(res, 400, errorBody('`file` and `model` are required.', 'invalid_request_error'));
    }
    switch (request.responseFormat ?? 'json') {
      case 'text':
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        return void res.end(`${text}\n`);
      case 'verbose_json':
        return sendJson(res, 200, {
          task: 'transcribe',
          language: request.language ?? 'english',
          duration: (request.wav?.durationMs ?? 0) / 1000,
          text,
          segments: [],
        });
      default:
        return sendJson(res, 200, { text, usage: { type: 'duration', seconds: Math.ceil((request.wav?.durationMs ?? 0) / 1000) } });
    }
  }
}

interface Part {
  name: string;
  fileName: string | undefined;
  contentType: string | undefined;
  body: Buffer;
}

/** A minimal multipart/form-data reader (RFC 7578): enough for what HTTP clients send. */
function parseMultipart(body: Buffer, boundary: string): Part[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: Part[] = [];
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break;
    const next = body.indexOf(delimiter, start);
    if (next === -1) break;
    // Each part: CRLF, headers, CRLF CRLF, body, CRLF before the next delimiter.
    const chunk = body.subarray(start + 2, next - 2);
    const split = chunk.indexOf('\r\n\r\n');
    if (split !== -1) {
      const headers = chunk.subarray(0, split).toString('utf8');
      const disposition = /content-disposition:([^\r\n]*)/i.exec(headers)?.[1] ?? '';
      const name = /\bname="([^"]*)"/i.exec(disposition)?.[1];
      if (name !== undefined) {
        parts.push({
          name,
          fileName: /\bfilename="([^"]*)"/i.exec(disposition)?.[1],
          contentType: /content-type:\s*([^\r\n]*)/i.exec(headers)?.[1]?.trim(),
          body: chunk.subarray(split + 4),
        });
      }
    }
    at = next;
  }
  return parts;
}

function readWav(bytes: Buffer): FakeTranscriptionRequest['wav'] {
  try {
    const wav = parseWav(bytes);
    const samples = wav.samples.length / wav.channels;
    return { sampleRate: wav.sampleRate, channels: wav.channels, samples, durationMs: (samples / wav.sampleRate) * 1000 };
  } catch {
    return undefined;
  }
}

function errorBody(message: string, type: string, code: string | null = null) {
  return { error: { message, type, param: null, code } };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
