import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { MediaStreamProtocol } from '@parley/carrier-core';
import { serviceLogger } from '@parley/observability';
import { CallSession, CallSessionDeps, SessionOutcome } from './call-session';

/** Where carriers connect: `/streams/{carrier}` (the calls service puts this URL in the carrier's markup). */
export const STREAM_PATH = /^\/streams\/([a-z0-9_-]+)\/?(\?.*)?$/;

/** What a drain left undone, by call id; `calls`: the calls it had to end. */
export interface DrainReport {
  calls: number;
  notEnded: string[];
  recordingsNotStored: string[];
}

function drainReport(outcomes: SessionOutcome[]): DrainReport {
  return {
    calls: outcomes.length,
    notEnded: outcomes.filter((o) => !o.ended).map((o) => o.callId),
    recordingsNotStored: outcomes.filter((o) => o.recording === 'not_stored').map((o) => o.callId),
  };
}

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
   * reason `shutdown` (the carrier hangs up; the call record says why) and store their recordings, within `endMs`.
   * Resolves by then with what was left undone, which is also logged (error) call by call: a call not ended stays
   * live until the calls service's reaper fails it `media_lost`.
   */
  async close({ graceMs = 0, endMs = 0 }: { graceMs?: number; endMs?: number } = {}): Promise<DrainReport> {
    this.draining = true;
    const closed = new Promise<void>((resolve) => this.http.close(() => resolve()));
    const graceOver = Date.now() + graceMs;
    while (this.sessions.size > 0 && Date.now() < graceOver) await new Promise((r) => setTimeout(r, 100));
    const deadline = Date.now() + endMs;
    const sessions = [...this.sessions];
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(sessions.map((s) => s.shutdown(deadline).catch((e) => this.log.error({ err: e, callId: s.callId }, 'shutting a call down failed')))),
      new Promise((resolve) => (timer = setTimeout(resolve, endMs))),
    ]);
    clearTimeout(timer);
    const report = drainReport(sessions.map((s) => s.outcome).filter((o) => o !== undefined));
    if (report.notEnded.length || report.recordingsNotStored.length) {
      this.log.error(report, 'drain incomplete: calls not ended (the reaper fails them media_lost) or recordings not stored');
    } else if (report.calls > 0) {
      this.log.info(report, 'drained: every call ended (shutdown) with its recording stored');
    }
    for (const client of this.wss.clients) client.close(1001, 'media worker shutting down');
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    await closed;
    return report;
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
