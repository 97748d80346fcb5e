import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  /** The full URL posted to (as the gateway rebuilds it from PUBLIC_URL). */
  url: string;
  path: string;
  headers: IncomingHttpHeaders;
  params: Record<string, string>;
}

/**
 * Plays the gateway's `/carriers/dev/…` routes for tests of the switch: records every form-encoded webhook and
 * answers with `respond` (default 204, no body).
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  respond: (hook: ReceivedWebhook) => { status: number; body?: string; contentType?: string } = () => ({ status: 204 });
  private readonly server: Server;
  private base = '';

  constructor() {
    this.server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      req.on('end', () => {
        const hook = { url: `${this.base}${req.url ?? ''}`, path: (req.url ?? '').split('?')[0], headers: req.headers, params: Object.fromEntries(new URLSearchParams(text)) };
        this.received.push(hook);
        const answer = this.respond(hook);
        res.writeHead(answer.status, answer.contentType ? { 'content-type': answer.contentType } : {}).end(answer.body);
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.base;
  }

  get url(): string {
    return this.base;
  }

  /** Waits for a webhook matching `where` (received already or later). */
  async next(where: (hook: ReceivedWebhook) => boolean, timeoutMs = 10_000): Promise<ReceivedWebhook> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.find(where);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no such webhook within ${timeoutMs} ms; got ${JSON.stringify(this.received.map((h) => [h.path, h.params]))}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** The `Status` of every status callback of the call, in the order received. */
  statuses(callId: string): string[] {
    return this.received.filter((h) => h.params['CallId'] === callId && h.params['Status'] !== undefined && h.path.endsWith('/status')).map((h) => h.params['Status']);
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
