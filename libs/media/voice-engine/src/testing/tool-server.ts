import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  /** Path and query, as received. */
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type ToolHandler = (request: ReceivedRequest, res: ServerResponse) => void;

/**
 * A tool endpoint on 127.0.0.1 for tests (allow it with the egress allowlist `127.0.0.1`): records every request
 * and answers with the handler (default 200 `{"ok":true}`). `hang()` makes it never answer.
 */
export class ToolServer {
  readonly requests: ReceivedRequest[] = [];
  private server: Server | undefined;
  private handler: ToolHandler = (_, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  private readonly open = new Set<ServerResponse>();

  respond(handler: ToolHandler): this {
    this.handler = handler;
    return this;
  }

  /** Answers with this status and body. */
  answer(status: number, body: string, contentType = 'text/plain'): this {
    return this.respond((_, res) => res.writeHead(status, { 'content-type': contentType }).end(body));
  }

  /** Never answers (until close). */
  hang(): this {
    return this.respond(() => undefined);
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
        this.requests.push(received);
        this.open.add(res);
        res.on('close', () => this.open.delete(res));
        this.handler(received, res);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const res of this.open) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
