import { createParser } from 'eventsource-parser';

export interface StreamedEvent {
  event: string;
  id: string | undefined;
  data: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON of any event type
}

/** A Server-Sent Events stream read the way a browser's EventSource would, collecting every event. */
export class EventStreamClient {
  readonly events: StreamedEvent[] = [];
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>;
  status = 0;
  contentType = '';
  private readonly controller = new AbortController();
  private readonly waiters = new Set<() => void>();

  private constructor(url: string, key: string) {
    let opened!: () => void;
    this.opened = new Promise<void>((resolve) => (opened = resolve));
    this.ended = this.read(url, key, opened);
  }

  private readonly opened: Promise<void>;

  /** Opens the stream; resolves once the response headers are in. */
  static async open(url: string, key: string): Promise<EventStreamClient> {
    const client = new EventStreamClient(url, key);
    await Promise.race([client.opened, client.ended]);
    return client;
  }

  /** Resolves with the first event matching `predicate` (already received or still to come). */
  async waitFor(predicate: (e: StreamedEvent) => boolean, timeoutMs = 20_000): Promise<StreamedEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.find(predicate);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no such event; got ${this.events.map((e) => e.event).join(', ')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 200);
        this.waiters.add(() => (clearTimeout(timer), resolve()));
      });
    }
  }

  close(): void {
    this.controller.abort();
  }

  private async read(url: string, key: string, opened: () => void): Promise<void> {
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' }, signal: this.controller.signal });
    this.status = res.status;
    this.contentType = res.headers.get('content-type') ?? '';
    opened();
    if (!res.body || !this.contentType.startsWith('text/event-stream')) return;
    const parser = createParser({
      onEvent: (e) => {
        this.events.push({ event: e.event ?? 'message', id: e.id, data: JSON.parse(e.data) });
        for (const wake of this.waiters) wake();
        this.waiters.clear();
      },
    });
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
    } catch (error) {
      if ((error as Error).name !== 'AbortError') throw error;
    }
  }
}
