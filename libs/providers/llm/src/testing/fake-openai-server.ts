import { randomBytes } from 'node:crypto';
import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { bagOfWordsEmbedding } from '../embeddings-provider';

/** The JSON body of a `POST /v1/chat/completions` as received (only the fields the fake looks at are typed). */
export interface FakeChatCompletionBody {
  model: string;
  messages: Array<{ role: string; content: unknown; tool_calls?: unknown[]; tool_call_id?: string }>;
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  tool_choice?: unknown;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  temperature?: number;
  max_tokens?: number;
  max_completion_tokens?: number;
  response_format?: { type: string };
  [key: string]: unknown;
}

/** One chat-completion request the server received. */
export interface FakeOpenAiRequest {
  method: string;
  /** Path and query, e.g. `/v1/chat/completions`. */
  path: string;
  /** Header names in lower case, as node:http gives them. */
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (the tools sent included). */
  body: FakeChatCompletionBody;
  /** How the answer ended: `finished` once fully sent, `closed` if the connection closed first. Unset until then. */
  outcome?: 'finished' | 'closed';
  /** Settles with `outcome`. */
  ended: Promise<'finished' | 'closed'>;
}

/** A tool call the fake model makes. */
export interface FakeToolCall {
  /** Default `call_<random>`. */
  id?: string;
  name: string;
  /** Raw JSON text, streamed in pieces of a few characters; or the exact pieces to stream. */
  arguments: string | string[];
}

/** A scripted assistant answer. */
export interface FakeOpenAiAnswer {
  /** Text, streamed in word-sized pieces; or the exact pieces to stream. */
  content?: string | string[];
  toolCalls?: FakeToolCall[];
  /** Model to report; default the requested one. */
  model?: string;
  /** Default `tool_calls` with tool calls, else `stop`. */
  finishReason?: string;
  /** Streaming: wait after the headers (and role chunk) before the first content or tool-call chunk. */
  firstTokenDelayMs?: number;
  /** Streaming: wait before each later chunk. */
  chunkDelayMs?: number;
}

/**
 * Raw server-sent events, to mimic a particular server's quirks: each item is one event's data, strings as they
 * are (e.g. `[DONE]`), anything else as JSON. Nothing is added.
 */
export interface FakeOpenAiRawStream {
  sse: unknown[];
  /** Wait before each event. */
  chunkDelayMs?: number;
}

/**
 * What a handler answers: the assistant's text; an answer with text and/or tool calls, the model to report, the
 * finish reason and streaming delays; raw server-sent events; or a raw HTTP answer (status and JSON body, e.g.
 * `{ status: 500, body: { error: { message: 'boom' } } }`).
 */
export type FakeOpenAiReply = string | FakeOpenAiAnswer | FakeOpenAiRawStream | { status: number; body: unknown };

export type FakeOpenAiHandler = (
  body: FakeChatCompletionBody,
  request: FakeOpenAiRequest,
) => FakeOpenAiReply | Promise<FakeOpenAiReply>;

export interface FakeOpenAiServerOptions {
  /** Ids listed by `GET /v1/models`. Default `['fake-model']`. */
  models?: string[];
  /** Length of the default embeddings (`POST /v1/embeddings`) when the request names no `dimensions`. Default 64. */
  embeddingDimensions?: number;
  /** Words the default embedding maps to another before hashing (`{ inexpensive: 'cheap' }`): see bagOfWordsEmbedding. */
  synonyms?: Record<string, string>;
}

/** The JSON body of a `POST /v1/embeddings` as received. */
export interface FakeEmbeddingsBody {
  model: string;
  input: string | string[];
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  [key: string]: unknown;
}

/** One embeddings request the server received. */
export interface FakeEmbeddingsRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: FakeEmbeddingsBody;
  /** How the answer ended (see FakeOpenAiRequest). */
  ended: Promise<'finished' | 'closed'>;
}

/**
 * What an embeddings handler answers: the vectors (one per input, in order); the default vectors after a delay
 * (`{ delayMs }`), or given ones after it; or a raw HTTP answer (`{ status, body }`, sent as it is, e.g. a 500, or
 * a 200 with a malformed body).
 */
export type FakeServerEmbeddingsReply = number[][] | { delayMs?: number; vectors?: number[][] } | { status: number; body: unknown };

export type FakeEmbeddingsHandler = (
  body: FakeEmbeddingsBody,
  request: FakeEmbeddingsRequest,
) => FakeServerEmbeddingsReply | undefined | Promise<FakeServerEmbeddingsReply | undefined>;

/**
 * A real HTTP server on 127.0.0.1 (random port) speaking OpenAI's chat-completions wire protocol, so tests run
 * the real `openai` SDK end to end: `POST /v1/chat/completions` (JSON, or server-sent events with `stream: true`,
 * tool calls included, in OpenAI's chunk format), `POST /v1/embeddings` and `GET /v1/models`. Answers are
 * scripted with `reply()` (the default answer is `ok`) and `replyEmbeddings()` (the default vectors are
 * bagOfWordsEmbedding of each input, with the server's synonyms).
 */
export class FakeOpenAiServer {
  /** Every chat-completion request received (with a JSON body), in order. */
  readonly requests: FakeOpenAiRequest[] = [];
  /** Every embeddings request received (with a JSON body), in order. */
  readonly embeddingRequests: FakeEmbeddingsRequest[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly models: string[];
  private handler: FakeOpenAiHandler = () => 'ok';
  private embeddingsHandler: FakeEmbeddingsHandler = () => undefined;
  private readonly embeddingDimensions: number;
  private readonly synonyms: Record<string, string>;
  private base: string | undefined;

  constructor(options: FakeOpenAiServerOptions = {}) {
    this.models = options.models ?? ['fake-model'];
    this.embeddingDimensions = options.embeddingDimensions ?? 64;
    this.synonyms = options.synonyms ?? {};
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

  /** The base URL (after `start()`). */
  get baseURL(): string {
    if (!this.base) throw new Error('FakeOpenAiServer: not started');
    return this.base;
  }

  /** Stops the server, cutting open connections (requests still waiting on a handler included). */
  async stop(): Promise<void> {
    if (!this.base) return;
    this.base = undefined;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  /** Scripts the answers to chat completions from now on. */
  reply(handler: FakeOpenAiHandler): this {
    this.handler = handler;
    return this;
  }

  /** Scripts the answers to embeddings requests from now on; a handler answering undefined gives the default vectors. */
  replyEmbeddings(handler: FakeEmbeddingsHandler): this {
    this.embeddingsHandler = handler;
    return this;
  }

  /** The vector the server gives `text` by default (at `dimensions`, default the server's). */
  embeddingOf(text: string, dimensions = this.embeddingDimensions): number[] {
    return bagOfWordsEmbedding(text, { dimensions, synonyms: this.synonyms });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    const route = path.split('?')[0];

    if (method === 'GET' && route === '/v1/models') {
      return sendJson(res, 200, {
        object: 'list',
        data: this.models.map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'parley-fake' })),
      });
    }
    if (method === 'POST' && route === '/v1/chat/completions') {
      let completion: FakeChatCompletionBody;
      try {
        completion = JSON.parse(raw) as FakeChatCompletionBody;
      } catch {
        return sendJson(res, 400, errorBody('We could not parse the JSON body of your request.', 'invalid_request_error'));
      }
      if (typeof completion !== 'object' || completion === null) {
        return sendJson(res, 400, errorBody('The body must be a JSON object.', 'invalid_request_error'));
      }
      const request: FakeOpenAiRequest = { method, path, headers: req.headers, body: completion, ended: watchEnd(res) };
      void request.ended.then((outcome) => (request.outcome = outcome));
      this.requests.push(request);
      if (typeof completion.model !== 'string' || !Array.isArray(completion.messages)) {
        return sendJson(res, 400, errorBody('`model` and `messages` are required.', 'invalid_request_error'));
      }
      const answer = await this.handler(completion, request);
      if (res.destroyed) return;
      if (typeof answer === 'object' && 'status' in answer) return sendJson(res, answer.status, answer.body);
      if (typeof answer === 'object' && 'sse' in answer) return sendRawStream(res, answer);
      const reply = typeof answer === 'string' ? { content: answer } : answer;
      return completion.stream ? sendStream(res, completion, reply) : sendJson(res, 200, chatCompletion(completion, reply));
    }
    if (method === 'POST' && route === '/v1/embeddings') return this.embeddings(req, res, raw);
    return sendJson(res, 404, errorBody(`Unknown request URL: ${method} ${route}.`, 'invalid_request_error'));
  }

  /** As OpenAI: `{ object: "list", data: [{ object: "embedding", embedding, index }], model, usage }`, floats or base64. */
  private async embeddings(req: IncomingMessage, res: ServerResponse, raw: string): Promise<void> {
    let body: FakeEmbeddingsBody;
    try {
      body = JSON.parse(raw) as FakeEmbeddingsBody;
    } catch {
      return sendJson(res, 400, errorBody('We could not parse the JSON body of your request.', 'invalid_request_error'));
    }
    if (typeof body !== 'object' || body === null) return sendJson(res, 400, errorBody('The body must be a JSON object.', 'invalid_request_error'));
    const request: FakeEmbeddingsRequest = { method: req.method ?? 'POST', path: req.url ?? '/', headers: req.headers, body, ended: watchEnd(res) };
    this.embeddingRequests.push(request);
    const inputs = typeof body.input === 'string' ? [body.input] : body.input;
    if (typeof body.model !== 'string' || !Array.isArray(inputs) || inputs.length === 0 || inputs.some((i) => typeof i !== 'string' || i === '')) {
      return sendJson(res, 400, errorBody('`model` and a non-empty `input` of non-empty strings are required.', 'invalid_request_error'));
    }
    const answer = await this.embeddingsHandler(body, request);
    if (answer && !Array.isArray(answer) && 'status' in answer) return sendJson(res, answer.status, answer.body);
    const scripted = Array.isArray(answer) ? answer : answer?.vectors;
    if (answer && !Array.isArray(answer) && !(await pause(res, answer.delayMs))) return;
    if (res.destroyed) return;
    const vectors = scripted ?? inputs.map((text) => this.embeddingOf(text, body.dimensions ?? this.embeddingDimensions));
    const tokens = inputs.reduce((n, text) => n + estimateTokens(text), 0);
    return sendJson(res, 200, {
      object: 'list',
      data: vectors.map((embedding, index) => ({
        object: 'embedding',
        index,
        embedding: body.encoding_format === 'base64' ? Buffer.from(new Float32Array(embedding).buffer).toString('base64') : embedding,
      })),
      model: body.model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
  }
}

type Reply = FakeOpenAiAnswer;

function textOf(reply: Reply): string {
  return Array.isArray(reply.content) ? reply.content.join('') : (reply.content ?? '');
}

function finishReasonOf(reply: Reply): string {
  return reply.finishReason ?? (reply.toolCalls?.length ? 'tool_calls' : 'stop');
}

function toolCallsOf(reply: Reply) {
  return (reply.toolCalls ?? []).map((call) => ({
    id: call.id ?? `call_${randomBytes(12).toString('base64url')}`,
    name: call.name,
    pieces: Array.isArray(call.arguments) ? call.arguments : pieces(call.arguments, 7),
  }));
}

function chatCompletion(request: FakeChatCompletionBody, reply: Reply) {
  const calls = toolCallsOf(reply);
  const text = textOf(reply);
  return {
    id: completionId(),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: reply.model ?? request.model,
    system_fingerprint: 'fp_parley_fake',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: calls.length > 0 && text === '' ? null : text,
          refusal: null,
          ...(calls.length > 0
            ? {
                tool_calls: calls.map((c) => ({
                  id: c.id,
                  type: 'function',
                  function: { name: c.name, arguments: c.pieces.join('') },
                })),
              }
            : {}),
        },
        logprobs: null,
        finish_reason: finishReasonOf(reply),
      },
    ],
    usage: usage(request, text),
  };
}

/**
 * Streams as OpenAI does: a role chunk, the text pieces, then per tool call a chunk with its index, id, type and
 * name (empty arguments) followed by chunks of argument fragments carrying only the index, then a chunk with the
 * finish reason, the usage chunk when asked, and `[DONE]`. Stops writing if the client goes away.
 */
async function sendStream(res: ServerResponse, request: FakeChatCompletionBody, reply: Reply): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const id = completionId();
  const created = Math.floor(Date.now() / 1000);
  const model = reply.model ?? request.model;
  const chunk = (delta: Record<string, unknown>, finishReason: string | null, extra: Record<string, unknown> = {}) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    system_fingerprint: 'fp_parley_fake',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...extra,
  });
  const write = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);

  const text = textOf(reply);
  const calls = toolCallsOf(reply);
  const body: Array<Record<string, unknown>> = [
    // Word-sized pieces, whitespace kept, so the concatenated deltas equal the content exactly.
    ...(Array.isArray(reply.content) ? reply.content : (text.match(/\s*\S+\s*/g) ?? (text ? [text] : []))).map(
      (piece) => chunk({ content: piece }, null),
    ),
    ...calls.flatMap((call, index) => [
      chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }, null),
      ...call.pieces.map((piece) => chunk({ tool_calls: [{ index, function: { arguments: piece } }] }, null)),
    ]),
    chunk({}, finishReasonOf(reply)),
  ];

  write(chunk({ role: 'assistant', content: text === '' && calls.length > 0 ? null : '', refusal: null }, null));
  for (const [i, data] of body.entries()) {
    if (!(await pause(res, i === 0 ? reply.firstTokenDelayMs : reply.chunkDelayMs))) return;
    write(data);
  }
  if (request.stream_options?.include_usage) {
    write({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: usage(request, text) });
  }
  res.end('data: [DONE]\n\n');
}

async function sendRawStream(res: ServerResponse, raw: FakeOpenAiRawStream): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const data of raw.sse) {
    if (!(await pause(res, raw.chunkDelayMs))) return;
    res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  }
  res.end();
}

/** Waits `ms`; false (at once) if the connection closed meanwhile. */
function pause(res: ServerResponse, ms: number | undefined): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false);
  if (!ms || ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onClose = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(!res.destroyed);
    }, ms);
    res.once('close', onClose);
  });
}

function watchEnd(res: ServerResponse): Promise<'finished' | 'closed'> {
  return new Promise((resolve) => {
    res.once('finish', () => resolve('finished'));
    res.once('close', () => resolve(res.writableFinished ? 'finished' : 'closed'));
  });
}

/** Splits into pieces of `size` characters (code points, so no surrogate pair is cut). */
function pieces(text: string, size: number): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

function usage(request: FakeChatCompletionBody, content: string) {
  const prompt = request.messages.reduce((n, m) => n + estimateTokens(typeof m.content === 'string' ? m.content : JSON.stringify(m.content)), 0);
  const completion = estimateTokens(content);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

// Roughly four characters a token, as OpenAI's own rule of thumb.
function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

function completionId(): string {
  return `chatcmpl-${randomBytes(12).toString('base64url')}`;
}

function errorBody(message: string, type: string) {
  return { error: { message, type, param: null, code: null } };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
