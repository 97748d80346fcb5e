import { IncomingMessage, Server } from 'node:http';
import { Socket } from 'node:net';

export interface LingerLimits {
  /** The longest a connection stays open for a client still sending, from the answer on. */
  ms: number;
  /** The most the gateway reads and discards before it closes anyway. */
  bytes: number;
}

/** nginx's lingering_timeout; more bytes than any body the gateway accepts, so honest clients always finish. */
export const LINGER_LIMITS: LingerLimits = { ms: 5_000, bytes: 32 * 1024 * 1024 };

/**
 * The gateway answers some requests before it has read their body (413, an unknown URL, a refused content type)
 * and then closes the connection. Closing a socket with unread bytes makes the kernel reset it, and a client still
 * writing its body fails its write and loses the answer it was sent. As well-known servers do ("lingering close"),
 * when Node closes a connection whose request body has not all arrived, the gateway sends the answer and its FIN,
 * keeps reading and discarding what the client still sends, and closes once the body has ended, the client has
 * closed, or a bound of bytes or time is reached.
 */
export function lingerBeforeClose(server: Server, limits: LingerLimits = LINGER_LIMITS): void {
  const current = new WeakMap<Socket, IncomingMessage>();
  server.on('request', (request: IncomingMessage) => current.set(request.socket, request));
  server.on('connection', (socket: Socket) => {
    // Node's HTTP server closes a connection after an answer through destroySoon (flush, then destroy).
    const destroySoon = socket.destroySoon.bind(socket);
    socket.destroySoon = () => {
      const request = current.get(socket);
      // Nothing more can come when the body is complete or the client has already ended its side.
      if (!request || request.complete || socket.readableEnded) destroySoon();
      else lingeringClose(socket, limits, request);
    };
  });
}

/**
 * Ends the gateway's side of a connection (after what was written on it) and closes it once the client has stopped
 * sending: it ended its side, the request `body` (when there is one) has all arrived, or a bound of bytes or time
 * was reached. What arrives meanwhile is read and discarded.
 */
export function lingeringClose(socket: Socket, limits: LingerLimits = LINGER_LIMITS, body?: IncomingMessage): void {
  let read = 0;
  const close = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  const timer = setTimeout(close, limits.ms).unref();
  socket.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > limits.bytes) close();
  });
  socket.once('end', close);
  socket.once('close', () => clearTimeout(timer));
  if (body) {
    body.once('end', close);
    // Node already discards the body (it dumps a request nobody read); resumed in case a parser stopped mid-way.
    body.resume();
  }
  socket.end();
  // With an early answer Node may leave the socket's handle stopped while its stream state says it flows (seen with
  // a request stream that filled its buffer before the answer): nothing would then read it again, so the client's
  // write would stall until the time bound and be reset. Start the handle reading once Node has settled the close.
  setImmediate(() => readOn(socket));
}

/** Node keeps no public way to restart a handle its stream state believes is reading; `_handle` is that handle. */
function readOn(socket: Socket): void {
  const handle = (socket as Socket & { _handle?: { reading?: boolean; readStart?: () => number } | null })._handle;
  if (socket.destroyed || !handle?.readStart || handle.reading) return;
  handle.reading = true;
  handle.readStart();
}
