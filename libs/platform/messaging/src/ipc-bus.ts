import { traceHeaders } from '@parley/tracing';
import { Bus, BusHandler, BusMessage, PublishOptions, SubscribeOptions } from './bus';
import { IpcPeer } from './ipc-peer';

interface SubscribeParams {
  sub: number;
  subject: string;
  durable: string;
  options?: SubscribeOptions;
}

/**
 * The bus of a child process whose parent holds the real one (standalone mode without NATS: the media worker runs
 * in its own process, the in-process bus stays in the parent). Every operation is carried to the parent, which
 * performs it on its bus: a durable delivery is acknowledged to the parent's bus only after the child's handler
 * succeeded, so at-least-once delivery holds across the boundary.
 */
export class IpcBus implements Bus {
  readonly kind = 'in-process' as const;
  private nextId = 1;
  private readonly handlers = new Map<number, BusHandler>();
  private readonly listeners = new Map<number, (payload: unknown, subject: string) => void>();
  private closed = false;

  constructor(private readonly peer: IpcPeer) {
    peer.handle<{ sub: number; message: BusMessage }, void>('bus.deliver', async ({ sub, message }) => {
      const handler = this.handlers.get(sub);
      if (!handler) throw new Error('subscription closed');
      await handler(message);
    });
    peer.on<{ id: number; payload: unknown; subject: string }>('bus.heard', ({ id, payload, subject }) => this.listeners.get(id)?.(payload, subject));
  }

  async publish(subject: string, payload: unknown, options: PublishOptions): Promise<void> {
    if (this.closed) throw new Error('bus closed');
    await this.peer.request('bus.publish', { subject, payload, options: { ...options, headers: { ...traceHeaders(), ...options.headers } } });
  }

  async subscribe(subject: string, durable: string, handler: BusHandler, options?: SubscribeOptions): Promise<void> {
    const sub = this.nextId++;
    this.handlers.set(sub, handler);
    await this.peer.request('bus.subscribe', { sub, subject, durable, options } satisfies SubscribeParams);
  }

  async broadcast(subject: string, payload: unknown): Promise<void> {
    if (!this.closed) this.peer.notify('bus.broadcast', { subject, payload });
  }

  async listen(subject: string, handler: (payload: unknown, subject: string) => void): Promise<() => void> {
    const id = this.nextId++;
    this.listeners.set(id, handler);
    await this.peer.request('bus.listen', { id, subject });
    return () => {
      this.listeners.delete(id);
      this.peer.notify('bus.unlisten', { id });
    };
  }

  async isHealthy(): Promise<boolean> {
    return !this.closed && (await this.peer.request<boolean>('bus.healthy').catch(() => false));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.handlers.clear();
    this.listeners.clear();
  }
}

/**
 * The parent's side of IpcBus: performs a child's operations on `bus`. One host serves one child slot across
 * restarts (`attach` each new child): a durable subscription is made once on the parent's bus and delivered to
 * whichever child holds it now; while no child does, deliveries fail and the bus redelivers rather than loses.
 */
export class IpcBusHost {
  private peer: IpcPeer | undefined;
  /** Durable name → the current child's subscription id. */
  private readonly durables = new Map<string, number>();
  private readonly unlisten = new Map<number, () => void>();

  constructor(private readonly bus: Bus) {}

  attach(peer: IpcPeer): void {
    this.detach();
    this.peer = peer;
    peer.handle<{ subject: string; payload: unknown; options: PublishOptions }, void>('bus.publish', ({ subject, payload, options }) =>
      this.bus.publish(subject, payload, options),
    );
    peer.handle<SubscribeParams, void>('bus.subscribe', async ({ sub, subject, durable, options }) => {
      const known = this.durables.has(durable);
      this.durables.set(durable, sub);
      if (!known) await this.bus.subscribe(subject, durable, (message) => this.deliver(durable, message), options);
    });
    peer.on<{ subject: string; payload: unknown }>('bus.broadcast', ({ subject, payload }) => void this.bus.broadcast(subject, payload));
    peer.handle<{ id: number; subject: string }, void>('bus.listen', async ({ id, subject }) => {
      this.unlisten.set(id, await this.bus.listen(subject, (payload, heard) => peer.notify('bus.heard', { id, payload, subject: heard })));
    });
    peer.on<{ id: number }>('bus.unlisten', ({ id }) => {
      this.unlisten.get(id)?.();
      this.unlisten.delete(id);
    });
    peer.handle('bus.healthy', () => this.bus.isHealthy());
  }

  /** The child exited: its live listeners end; its durable subscriptions wait for the next child. */
  detach(): void {
    this.peer = undefined;
    for (const stop of this.unlisten.values()) stop();
    this.unlisten.clear();
  }

  private async deliver(durable: string, message: BusMessage): Promise<void> {
    const peer = this.peer;
    if (!peer) throw new Error(`no process holds the subscription ${durable} now`);
    await peer.request('bus.deliver', { sub: this.durables.get(durable), message });
  }
}
