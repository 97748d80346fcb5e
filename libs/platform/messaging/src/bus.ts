
export interface BusMessage<P = unknown> {
  /** Stable id of the message; JetStream de-duplicates on it and consumers may too. */
  id: string;
  subject: string;
  payload: P;
  headers: Record<string, string>;
  /** 1 on first delivery, higher on redelivery. */
  deliveryCount: number;
}

export type BusHandler<P = unknown> = (message: BusMessage<P>) => Promise<void>;

export interface SubscribeOptions {
  /**
   * Messages handled at once by this replica (default 1: one after the other, in stream order). Above 1 the
   * handler must not depend on order; each message is still acknowledged only after its own handler succeeded.
   */
  concurrency?: number;
}

export interface PublishOptions {
  id: string;
  headers?: Record<string, string>;
  /**
   * Which delivery of the message this publish is (the outbox's attempt). The in-process bus, which has no
   * redelivery of its own, reports it as the delivery count, so a consumer's bound on deliveries (a poison
   * message parked after N) holds in both modes; JetStream counts its own redeliveries.
   */
  deliveryCount?: number;
}

/**
 * Durable publish/subscribe with at-least-once delivery. A subscription is named (`durable`): each durable name
 * receives every message once (redelivered until its handler succeeds); several replicas using the same durable
 * name share the work.
 */
export interface Bus {
  readonly kind: 'nats' | 'in-process';
  publish(subject: string, payload: unknown, options: PublishOptions): Promise<void>;
  /** Subscribes a durable consumer to a subject (or a wildcard such as `parley.events.>`). */
  subscribe(subject: string, durable: string, handler: BusHandler, options?: SubscribeOptions): Promise<void>;
  /**
   * Fire-and-forget to every current listener (no storage, no redelivery): live views such as a call's event
   * stream, where a late or missed message is recovered from a snapshot, never from the bus.
   */
  broadcast(subject: string, payload: unknown): Promise<void>;
  /** Hears every broadcast on `subject` (wildcards allowed) until the returned function is called. */
  listen(subject: string, handler: (payload: unknown, subject: string) => void): Promise<() => void>;
  isHealthy(): Promise<boolean>;
  close(): Promise<void>;
}

/** NATS subject matching: `*` matches one token, `>` the rest. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length || (p[i] !== '*' && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}
