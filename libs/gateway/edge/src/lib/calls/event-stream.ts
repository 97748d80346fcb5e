import { FastifyReply, FastifyRequest } from 'fastify';
import { LiveSubject } from '@parley/contracts';
import { Bus } from '@parley/messaging';

const HEARTBEAT_MS = 15_000;

export interface EventStream {
  /** One Server-Sent Event; nothing once the stream is closed. */
  send(event: string, id: string, data: unknown): void;
  /** Ends the stream (once); `onClose` runs. */
  finish(): void;
}

/**
 * Takes over the reply for Server-Sent Events: the route's headers (request id, CORS, rate limit) plus the stream's,
 * a comment every 15 s so proxies keep an idle stream open, and `onClose` once it ends, by either side.
 */
export function openEventStream(request: FastifyRequest, reply: FastifyReply, onClose: () => void): EventStream {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    // Proxies such as nginx would otherwise buffer the stream.
    'x-accel-buffering': 'no',
  });
  // A comment at once sends the headers now, not with the first event: a stream with nothing to say yet (no call
  // ringing) is open all the same, and a client waiting for its headers (fetch) would wait for the first heartbeat.
  raw.write(': open\n\n');
  let open = true;
  const heartbeat = setInterval(() => raw.write(': keep-alive\n\n'), HEARTBEAT_MS);
  const finish = () => {
    if (!open) return;
    open = false;
    clearInterval(heartbeat);
    onClose();
    raw.end();
  };
  request.raw.on('close', finish);
  return {
    send: (event, id, data) => {
      if (open) raw.write(`id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    finish,
  };
}

export interface LiveFollow<A, S> {
  /** What the stream opens with, read once listening had begun. */
  snapshot: S;
  /** What was heard while the snapshot was read (already reflected in it, or not: the caller decides). */
  early: A[];
  /** Routes everything heard from now on. */
  follow(deliver: (activity: A) => void): void;
  stopListening(): void;
}

/**
 * Starts listening on a live subject before reading the snapshot a stream opens with, so nothing that happens in
 * between is lost: what is heard meanwhile is kept (`early`) until the caller `follow`s. A failed read stops
 * listening and rethrows (a 404 or 503 is answered as problem+json, as on any route).
 */
export async function listenThenRead<A, S>(bus: Bus, subject: LiveSubject<A>, read: () => Promise<S>): Promise<LiveFollow<A, S>> {
  const early: A[] = [];
  let deliver: (activity: A) => void = (a) => void early.push(a);
  const stopListening = await bus.listen(subject.name, (payload) => deliver(payload as A));
  try {
    const snapshot = await read();
    return { snapshot, early, follow: (d) => void (deliver = d), stopListening };
  } catch (error) {
    stopListening();
    throw error;
  }
}
