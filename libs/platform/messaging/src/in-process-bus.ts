import { traceHeaders } from '@parley/tracing';
import { Bus, BusHandler, PublishOptions, subjectMatches } from './bus';

interface Subscription {
  pattern: string;
  durable: string;
  handler: BusHandler;
}

/**
 * The bus of standalone mode, when no NATS_URL is set. `publish` resolves only once every durable subscription
 * has handled the message, so the outbox relay marks a record published only after delivery: a crash in between
 * leaves the record in the outbox and it is delivered again (at-least-once, durable through the database).
 * Messages published before `open()` wait, so services that subscribe later in start-up miss nothing.
 */
export class InProcessBus implements Bus {
  readonly kind = 'in-process' as const;
  private readonly subscriptions: Subscription[] = [];
  private opened!: () => void;
  private readonly openedPromise = new Promise<void>((resolve) => (this.opened = resolve));
  private closed = false;
  private readonly listeners = new Set<{ pattern: string; handler: (payload: unknown, subject: string) => void }>();

  open(): void {
    this.opened();
  }

  async publish(subject: string, payload: unknown, options: PublishOptions): Promise<void> {
    await this.openedPromise;
    if (this.closed) throw new Error('bus closed');
    // One delivery per durable name; replicas sharing a name (not possible in one process) would share it.
    const byDurable = new Map<string, Subscription>();
    for (const s of this.subscriptions) {
      if (subjectMatches(s.pattern, subject) && !byDurable.has(s.durable)) byDurable.set(s.durable, s);
    }
    // Payloads cross a JSON boundary exactly as they would over NATS, so no handler can mutate a shared object.
    const wire = JSON.stringify(payload);
    const headers = { ...traceHeaders(), ...options.headers };
    await Promise.all(
      [...byDurable.values()].map((s) =>
        s.handler({
          id: options.id,
          subject,
          payload: JSON.parse(wire),
          headers: { ...headers },
          deliveryCount: options.deliveryCount ?? 1,
        }),
      ),
    );
  }

  async subscribe(subject: string, durable: string, handler: BusHandler): Promise<void> {
    this.subscriptions.push({ pattern: subject, durable, handler });
  }

  async broadcast(subject: string, payload: unknown): Promise<void> {
    if (this.closed) return;
    const wire = JSON.stringify(payload);
    for (const l of [...this.listeners]) {
      if (subjectMatches(l.pattern, subject)) l.handler(JSON.parse(wire), subject);
    }
  }

  async listen(subject: string, handler: (payload: unknown, subject: string) => void): Promise<() => void> {
    const listener = { pattern: subject, handler };
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async isHealthy(): Promise<boolean> {
    return !this.closed;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.subscriptions.length = 0;
    this.listeners.clear();
  }
}
