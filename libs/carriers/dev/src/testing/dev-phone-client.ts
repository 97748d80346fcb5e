import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import WebSocket from 'ws';
import { DevPhoneClientMessage, DevPhoneServerMessage, DevSwitch } from '../dev-switch';

/**
 * A dev phone page without the page: a real `ws` client on the switch's socket that records what the switch says
 * and says what a page would. For tests of the switch and of the whole platform.
 */
export class DevPhoneClient {
  readonly messages: DevPhoneServerMessage[] = [];
  private readonly waiters = new Set<() => void>();

  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (data) => {
      this.messages.push(JSON.parse(String(data)) as DevPhoneServerMessage);
      for (const wake of this.waiters) wake();
    });
    socket.on('close', () => {
      for (const wake of this.waiters) wake();
    });
  }

  /** Opens the socket (`ws://host/dev/phone/socket`) and waits for the switch's `hello`. */
  static async connect(url: string, options: { origin?: string } = {}): Promise<DevPhoneClient> {
    const socket = new WebSocket(url, options.origin ? { origin: options.origin } : {});
    // Listening before the socket opens: the hello may arrive in the same read as the handshake.
    const client = new DevPhoneClient(socket);
    await new Promise<void>((resolve, reject) => socket.once('open', () => resolve()).once('error', reject));
    await client.next('hello');
    return client;
  }

  get open(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  send(message: DevPhoneClientMessage): void {
    this.socket.send(JSON.stringify(message));
  }

  /** The first message of `type` (matching `where`) received so far or from now on. */
  async next<T extends DevPhoneServerMessage['type']>(
    type: T,
    where: (m: Extract<DevPhoneServerMessage, { type: T }>) => boolean = () => true,
    timeoutMs = 10_000,
  ): Promise<Extract<DevPhoneServerMessage, { type: T }>> {
    const find = () => this.messages.find((m): m is Extract<DevPhoneServerMessage, { type: T }> => m.type === type && where(m as Extract<DevPhoneServerMessage, { type: T }>));
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = find();
      if (found) return found;
      if (!this.open) throw new Error(`dev phone socket closed before a ${type} message; got ${JSON.stringify(this.messages)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${type} message within ${timeoutMs} ms; got ${JSON.stringify(this.messages)}`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, left);
        this.waiters.add(wake);
      });
    }
  }

  async close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => this.socket.once('close', () => resolve()));
    this.socket.close();
    await closed;
  }
}

/**
 * A DevSwitch on a plain node:http server on 127.0.0.1 (random port), as the gateway mounts it: JSON bodies, the
 * socket upgrade. Resolves to the base URL and a stop function.
 */
export async function serveDevSwitch(devSwitch: DevSwitch): Promise<{ url: string; server: Server; stop: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    void readJson(req).then(async (body) => {
      const answer = await devSwitch.handleHttp({ method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body });
      res.writeHead(answer.status, { 'content-type': answer.contentType }).end(answer.body);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('upgrade', (req, socket, head) => {
    if (!devSwitch.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    server,
    stop: async () => {
      await devSwitch.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    req.on('end', () => {
      try {
        resolve(text ? JSON.parse(text) : undefined);
      } catch {
        resolve(undefined);
      }
    });
  });
}
