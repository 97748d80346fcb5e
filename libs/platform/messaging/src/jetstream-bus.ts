import {
  AckPolicy,
  connect,
  ConsumerMessages,
  DeliverPolicy,
  headers as natsHeaders,
  JetStreamClient,
  JetStreamManager,
  JSONCodec,
  JsMsg,
  NatsConnection,
  nanos,
  RetentionPolicy,
  StorageType,
} from 'nats';
import { StreamDef, STREAMS } from '@parley/contracts';
import { serviceLogger } from '@parley/observability';
import { traceHeaders } from '@parley/tracing';
import { Bus, BusHandler, PublishOptions, subjectMatches, SubscribeOptions } from './bus';

const codec = JSONCodec();
const log = serviceLogger('bus');

/** Redelivery back-off after a failed handler: 1 s, 5 s, 25 s, then every 60 s. */
const REDELIVERY_DELAYS_MS = [1000, 5000, 25000, 60000];

/**
 * NATS JetStream: messages are stored in file-backed streams (declared at start-up) and delivered to durable
 * consumers with explicit acks, so a consumer that is down receives what it missed when it comes back.
 * Publishes carry a message id; the stream's duplicate window drops re-publishes of the same id.
 */
export class JetStreamBus implements Bus {
  readonly kind = 'nats' as const;
  private readonly consumers: ConsumerMessages[] = [];

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly ns: Namespace,
  ) {}

  /**
   * `namespace` keeps deployments that share one NATS server apart: it prefixes every subject, stream and
   * durable consumer name (empty = none).
   */
  static async connect(servers: string, name: string, namespace = '', streams: StreamDef[] = Object.values(STREAMS)): Promise<JetStreamBus> {
    const nc = await connect({
      servers: servers.split(','),
      name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
    });
    const jsm = await nc.jetstreamManager();
    const ns = new Namespace(namespace);
    for (const stream of streams) await ensureStream(jsm, stream, ns);
    return new JetStreamBus(nc, nc.jetstream(), jsm, ns);
  }

  async publish(subject: string, payload: unknown, options: PublishOptions): Promise<void> {
    const h = natsHeaders();
    for (const [k, v] of Object.entries({ ...traceHeaders(), ...options.headers })) h.set(k, v);
    await this.js.publish(this.ns.subject(subject), codec.encode(payload), { msgID: options.id, headers: h });
  }

  async subscribe(subject: string, durable: string, handler: BusHandler, options: SubscribeOptions = {}): Promise<void> {
    const stream = Object.values(STREAMS).find((s) => s.subjects.some((p) => subjectMatches(p, subject.replace(/>$/, 'x'))));
    if (!stream) throw new Error(`no stream stores subject ${subject}`);
    const streamName = this.ns.stream(stream.name);
    durable = this.ns.stream(durable);
    await this.jsm.consumers.add(streamName, {
      durable_name: durable,
      filter_subject: this.ns.subject(subject),
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(30_000),
      // Unbounded on purpose: at its limit JetStream would drop the message, leaving only an advisory. BusServer
      // bounds a consumer's retries by deliveryCount and parks what it cannot handle in the service's dead_letters
      // before acknowledging it (MAX_DELIVERIES).
      max_deliver: -1,
      max_ack_pending: 1000,
    });
    const consumer = await this.js.consumers.get(streamName, durable);
    const messages = await consumer.consume({ max_messages: 256 });
    this.consumers.push(messages);
    const handle = async (m: JsMsg): Promise<void> => {
      const headers: Record<string, string> = {};
      for (const [k, v] of m.headers ?? []) headers[k] = v[0];
      try {
        await handler({
          id: m.headers?.get('Nats-Msg-Id') || `${streamName}:${m.seq}`,
          subject: this.ns.strip(m.subject),
          payload: codec.decode(m.data),
          headers,
          deliveryCount: m.info.deliveryCount,
        });
        m.ack();
      } catch (error) {
        const delay = REDELIVERY_DELAYS_MS[Math.min(m.info.deliveryCount - 1, REDELIVERY_DELAYS_MS.length - 1)];
        log.warn({ err: error, subject: m.subject, durable, delay }, 'handler failed; message will be redelivered');
        m.nak(delay);
      }
    };
    const concurrency = Math.max(1, options.concurrency ?? 1);
    void (async () => {
      const running = new Set<Promise<void>>();
      for await (const m of messages) {
        const work = handle(m).finally(() => running.delete(work));
        running.add(work);
        if (running.size >= concurrency) await Promise.race(running);
      }
    })();
  }

  async broadcast(subject: string, payload: unknown): Promise<void> {
    this.nc.publish(this.ns.subject(subject), codec.encode(payload));
  }

  async listen(subject: string, handler: (payload: unknown, subject: string) => void): Promise<() => void> {
    const sub = this.nc.subscribe(this.ns.subject(subject), {
      callback: (error, msg) => {
        if (error) return log.warn({ err: error, subject }, 'listener failed');
        try {
          handler(codec.decode(msg.data), this.ns.strip(msg.subject));
        } catch (e) {
          log.warn({ err: e, subject }, 'listener threw');
        }
      },
    });
    // The subscription is live on the server once flushed; a broadcast after listen() resolves is heard. While the
    // connection is down (a NATS restart) the flush fails, but the subscription stands: the client subscribes again
    // on every reconnect, so the listener hears what is broadcast from then on.
    await this.nc.flush().catch((error: unknown) => log.warn({ err: error, subject }, 'listening while disconnected; subscribed again on reconnect'));
    return () => sub.unsubscribe();
  }

  async isHealthy(): Promise<boolean> {
    if (this.nc.isClosed()) return false;
    await this.nc.flush();
    return true;
  }

  async close(): Promise<void> {
    for (const c of this.consumers) c.stop();
    if (!this.nc.isClosed()) await this.nc.drain();
  }
}

class Namespace {
  constructor(private readonly prefix: string) {}

  subject(subject: string): string {
    return this.prefix ? `${this.prefix}.${subject}` : subject;
  }

  strip(subject: string): string {
    return this.prefix && subject.startsWith(`${this.prefix}.`) ? subject.slice(this.prefix.length + 1) : subject;
  }

  /** Stream and consumer names cannot contain dots. */
  stream(name: string): string {
    return this.prefix ? `${this.prefix.replace(/\W/g, '_')}_${name}` : name;
  }
}

async function ensureStream(jsm: JetStreamManager, stream: StreamDef, ns: Namespace): Promise<void> {
  const config = {
    name: ns.stream(stream.name),
    description: stream.description,
    subjects: stream.subjects.map((s) => ns.subject(s)),
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    max_age: nanos(7 * 24 * 3600 * 1000),
    duplicate_window: nanos(10 * 60 * 1000),
  };
  try {
    await jsm.streams.info(config.name);
    await jsm.streams.update(config.name, config);
  } catch (error) {
    if (!/stream not found/i.test(String((error as Error).message))) throw error;
    await jsm.streams.add(config);
  }
}
