import { AddressInfo, connect, createServer, Server, Socket } from 'node:net';

interface Backend {
  name: string;
  port: number;
  probe: () => Promise<boolean>;
  ready: boolean;
}

/**
 * A TCP load balancer in front of media workers, as a Kubernetes Service is in front of their pods: each new
 * connection goes to one of the backends whose readiness probe answered last time (round robin), and a connection
 * already open stays on its backend until either end closes it. Probes run every `periodMs`.
 */
export class ReadinessBalancer {
  private readonly backends: Backend[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly server: Server = createServer((client) => this.route(client));
  private next = 0;
  private probing: Promise<void> | undefined;
  private running = false;
  /** The backend each accepted connection went to, in order (undefined: none was ready, the connection was closed). */
  readonly routed: (string | undefined)[] = [];

  constructor(private readonly periodMs = 100) {}

  /** Listens on a free loopback port, which it returns. */
  async start(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.running = true;
    this.probing = this.probeLoop();
    return (this.server.address() as AddressInfo).port;
  }

  /** A backend on a loopback port; not ready until its probe first answers true. */
  add(name: string, port: number, probe: () => Promise<boolean>): void {
    this.backends.push({ name, port, probe, ready: false });
  }

  isReady(name: string): boolean {
    return this.backends.some((b) => b.name === name && b.ready);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.probing;
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private route(client: Socket): void {
    const ready = this.backends.filter((b) => b.ready);
    if (ready.length === 0) {
      this.routed.push(undefined);
      client.destroy();
      return;
    }
    const backend = ready[this.next++ % ready.length];
    this.routed.push(backend.name);
    const upstream = connect(backend.port, '127.0.0.1');
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      this.sockets.add(a);
      a.pipe(b);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        this.sockets.delete(a);
        b.destroy();
      });
    }
  }

  private async probeLoop(): Promise<void> {
    while (this.running) {
      await Promise.all(this.backends.map(async (b) => (b.ready = await b.probe().catch(() => false))));
      await new Promise((resolve) => setTimeout(resolve, this.periodMs));
    }
  }
}

/** A readiness probe: the address's /readyz answers 200 within half a second. */
export function readyz(baseUrl: () => string): () => Promise<boolean> {
  return async () => (await fetch(`${baseUrl()}/readyz`, { signal: AbortSignal.timeout(500) })).status === 200;
}
