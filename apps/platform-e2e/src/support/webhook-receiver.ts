import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { until } from './until';

export interface ReceivedEvent {
  type: string;
  call_id: string;
  data: Record<string, unknown>;
}

/** The customer's webhook endpoint: keeps every event delivered to it. */
export class WebhookReceiver {
  readonly events: ReceivedEvent[] = [];
  private readonly server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      this.events.push(JSON.parse(body) as ReceivedEvent);
      res.writeHead(200).end();
    });
  });

  /** Listens on 127.0.0.1; resolves to the URL to register. */
  async start(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  /** The event `type` about `callId`, once delivered. */
  next(type: string, callId: string): Promise<ReceivedEvent> {
    return until(() => this.events.find((e) => e.type === type && e.call_id === callId), `${type} of ${callId}`);
  }

  stop(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}
