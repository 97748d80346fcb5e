import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { MediaStreamProtocol } from '@parley/carrier-core';
import { serviceLogger } from '@parley/observability';
import { CallSession, CallSessionDeps } from './call-session';

/** Where carriers connect: `/streams/{carrier}` (the calls service puts this URL in the carrier's markup). */
export const STREAM_PATH = /^\/streams\/([a-z0-9_-]+)\/?(\?.*)?$/;

/**
 * The media worker's WebSocket server: one CallSession per carrier stream, the carrier's protocol picked by the
 * path. Unknown paths are refused at the upgrade (404), before any session exists.
 */
export class MediaStreamServer {
  private readonly log = serviceLogger('media-worker');
  private readonly http: Server;
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  private readonly sessions = new Set<CallSession>();
  private draining = false;

  constructor(
    private readonly protocols: Record<string, MediaStreamProtocol>,
    private readonly deps: Omit<CallSessionDeps, 'protocol'>,
  ) {
    this.http = createServer((_req, res) => res.writeHead(426, { 'content-type': 'text/plain' }).end('WebSocket only\n'));
    this.http.on('upgrade', (req: IncomingMessage, socket, head) => {
      const carrier = STREAM_PATH.exec(req.url ?? '')?.[1];
      const protocol = carrier ? this.protocols[carrier] : undefined;
      if (this.draining) {
        socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n');
        return;
      }
      if (!protocol) {
        socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, protocol));
    });
  }

  async listen(port: number, host: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(port, host, () => resolve());
    });
    return (this.http.address() as AddressInfo).port;
  }

  /**
   * Drain: stop accepting streams at once, let live calls finish for up to `graceMs`, then end the rest with
   * reason `shutdown` (the carrier hangs up; the call record says why).
   */
  async close(graceMs = 0): Promise<void> {
    this.draining = true;
    const closed = new Promise<void>((resolve) => this.http.close(() => resolve()));
    const deadline = Date.now() + graceMs;
    while (this.sessions.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    await Promise.all([...this.sessions].map((s) => s.shutdown()));
    for (const client of this.wss.clients) client.close(1001, 'media worker shutting down');
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    await closed;
  }

  /** Streams open on this worker. */
  get activeStreams(): number {
    return this.sessions.size;
  }

  private accept(ws: WebSocket, protocol: MediaStreamProtocol): void {
    const session = new CallSession(
      { send: (frame) => ws.readyState === WebSocket.OPEN && ws.send(frame), close: (code, reason) => ws.close(code, reason) },
      { ...this.deps, protocol },
    );
    this.sessions.add(session);
    // Frames are handled one at a time, in order: a session's state (attach, audio, stop) depends on it.
    let queue = Promise.resolve();
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const frame = data.toString();
      queue = queue.then(() => session.onFrame(frame)).catch((e) => this.log.error({ err: e, callId: session.callId }, 'media frame failed'));
    });
    ws.on('close', () => {
      queue = queue.then(() => session.onClose()).finally(() => this.sessions.delete(session));
    });
    ws.on('error', (e) => this.log.warn({ err: e, callId: session.callId }, 'media socket error'));
  }
}
