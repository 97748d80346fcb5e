import { MediaStreamProtocol } from '@parley/carrier-core';
import { serviceLogger } from '@parley/observability';
import { engineMetrics, FRAME_MS, REFILL_FRAMES } from '@parley/voice-engine';
import { CallLinks } from './call-links';
import { CallSession, CallSessionDeps, SessionOutcome, StreamSocket } from './call-session';
import { mediaPlayoutJitter } from './media-metrics';
import { StreamThread } from './stream-thread/stream-thread';

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
 * Agent frames queued in the stream thread ahead of real time: what a pause of the main thread may last unheard,
 * topped up every REFILL_FRAMES (100 ms), so at least 500 ms. 500 ms: under load a major GC of the main thread's heap does most of its marking in steps inside allocations, which
 * held the thread 170-310 ms every 7-10 s at 100 calls; with 160 ms every call's answer then went silent at once for
 * up to 190 ms. A clear drops the queue at once, so a longer lead costs a barge-in nothing.
 */
export const STREAM_LEAD_FRAMES = 25 + REFILL_FRAMES;

/** An open stream: its session and, while a frame's handling is unfinished (an attach), the frames waiting behind it. */
interface Stream {
  session: CallSession;
  /** Settles when every frame handed over so far has been handled; undefined when that is so already. */
  tail: Promise<void> | undefined;
}

/** The socket of one stream, as a session sees it: kept on the stream thread, which plays the audio on time. */
class ThreadSocket implements StreamSocket {
  readonly leadFrames = STREAM_LEAD_FRAMES;
  /** When (performance.now ms, realClock's time) the next frame handed over will play. */
  private playAt = 0;

  constructor(
    private readonly thread: StreamThread,
    private readonly id: number,
  ) {}

  audio(frame: string): number {
    const at = Math.max(performance.now(), this.playAt);
    this.playAt = at + FRAME_MS;
    this.thread.send({ op: 'audio', id: this.id, frame });
    return at;
  }

  mark(frame: string): void {
    this.thread.send({ op: 'mark', id: this.id, frame });
  }

  text(frame: string): void {
    this.thread.send({ op: 'text', id: this.id, frame });
  }

  clear(frame: string): number {
    const until = this.playAt;
    this.playAt = 0;
    this.thread.send({ op: 'clear', id: this.id, frame });
    return until;
  }

  close(code: number, reason: string): void {
    this.thread.send({ op: 'close', id: this.id, code, reason });
  }
}

/**
 * The media worker's WebSocket server: one CallSession per carrier stream, the carrier's protocol picked by the
 * path (`/streams/{carrier}`, or one of `paths`, such as the browsers' `/realtime`). Unknown paths are refused at the upgrade (404), before any session exists. The sockets themselves live on
 * a stream thread (stream-thread/), which paces the agent's audio; sessions, engines and carrier protocols run here.
 */
export class MediaStreamServer {
  private readonly log = serviceLogger('media-worker');
  private thread: StreamThread;
  private readonly streams = new Map<number, Stream>();
  private readonly sessions = new Set<CallSession>();
  /** Where the two ends of calls between people meet; this worker's own when the deps bring none (no bus). */
  private readonly links: CallLinks;
  private draining = false;
  private listeningOn: { port: number; host: string } | undefined;

  constructor(
    private readonly protocols: Record<string, MediaStreamProtocol>,
    /** Paths served besides `/streams/{carrier}`, each with its protocol's name; such a protocol has no `/streams/` path. */
    private readonly paths: Record<string, string>,
    private readonly deps: Omit<CallSessionDeps, 'protocol'>,
    /** The stream thread's scheduling priority (nice; MEDIA_STREAM_NICE): 0 or unset leaves the process's. */
    private readonly threadNice = 0,
  ) {
    this.links = deps.links ?? new CallLinks();
    this.thread = this.startThread();
  }

  async listen(port: number, host: string): Promise<number> {
    const bound = await this.thread.listen(port, host);
    this.listeningOn = { port: bound, host };
    return bound;
  }

  /**
   * Drain: stop accepting streams at once, let live calls finish for up to `graceMs`, then end the rest with
   * reason `shutdown` (the carrier hangs up; the call record says why) and store their recordings, within `endMs`.
   * Resolves by then with what was left undone, which is also logged (error) call by call: a call not ended stays
   * live until the calls service's reaper fails it `media_lost`.
   */
  async close({ graceMs = 0, endMs = 0 }: { graceMs?: number; endMs?: number } = {}): Promise<DrainReport> {
    this.draining = true;
    // Once this resolves no stream is accepted: a carrier connecting now is refused, not attached to a closing worker.
    await this.thread.drain();
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
    await this.thread.stop();
    return report;
  }

  /** Streams open on this worker. */
  get activeStreams(): number {
    return this.sessions.size;
  }

  /** The session whose open stream carries `callId` (what a command about the call acts on); undefined when none. */
  sessionOf(callId: string): CallSession | undefined {
    for (const session of this.sessions) if (session.callId === callId && session.holdsStream) return session;
    return undefined;
  }

  private startThread(): StreamThread {
    return new StreamThread(
      {
        carriers: Object.keys(this.protocols).filter((c) => !Object.values(this.paths).includes(c)),
        paths: this.paths,
        maxPayload: 1024 * 1024,
        nice: this.threadNice || undefined,
      },
      {
        open: (id, carrier) => this.accept(id, this.protocols[carrier]),
        frame: (id, frame) => {
          const stream = this.streams.get(id);
          if (stream) this.onFrame(stream, frame);
        },
        closed: (id) => this.closed(id),
        error: (id, message) => this.log.warn({ err: message, callId: this.streams.get(id)?.session.callId }, 'media socket error'),
        stats: (_sent, late, jitterMs) => {
          engineMetrics.framesLate.inc(late);
          for (const ms of jitterMs) mediaPlayoutJitter.observe(ms / 1000);
        },
        exit: (error) => this.threadDied(error),
        priority: (nice, taken, reason) =>
          taken
            ? this.log.info({ nice }, 'stream thread priority taken')
            : this.log.info({ nice, wanted: this.threadNice, reason }, 'stream thread keeps its priority (MEDIA_STREAM_NICE below 0 needs CAP_SYS_NICE): its pacing shares the cores equally with the rest'),
      },
    );
  }

  private accept(id: number, protocol: MediaStreamProtocol): void {
    const session = new CallSession(new ThreadSocket(this.thread, id), { ...this.deps, links: this.links, protocol });
    this.sessions.add(session);
    this.streams.set(id, { session, tail: undefined });
  }

  /**
   * Frames are handled one at a time, in order: a session's state (attach, audio, stop) depends on it. A frame
   * handled at once (the caller's audio once attached: nearly all) needs no promise; while one is unfinished, the
   * frames after it wait in a chain behind it.
   */
  private onFrame(stream: Stream, frame: string): void {
    if (stream.tail) return this.behind(stream, stream.tail.then(() => this.handle(stream, frame)));
    const unfinished = this.handle(stream, frame);
    if (unfinished) this.behind(stream, unfinished);
  }

  private handle(stream: Stream, frame: string): Promise<void> | undefined {
    const failed = (e: unknown) => this.log.error({ err: e, callId: stream.session.callId }, 'media frame failed');
    try {
      return stream.session.onFrame(frame)?.catch(failed);
    } catch (e) {
      failed(e);
      return undefined;
    }
  }

  private behind(stream: Stream, unfinished: Promise<void>): void {
    const tail: Promise<void> = unfinished.then(() => {
      if (stream.tail === tail) stream.tail = undefined;
    });
    stream.tail = tail;
  }

  private closed(id: number): void {
    const stream = this.streams.get(id);
    if (!stream) return;
    this.streams.delete(id);
    void Promise.resolve(stream.tail)
      .then(() => stream.session.onClose())
      .finally(() => this.sessions.delete(stream.session));
  }

  /**
   * The stream thread died: its sockets are gone, so every stream is closed (its call ends as a dropped stream
   * does), and a new thread takes the port unless the worker is draining.
   */
  private threadDied(error: Error): void {
    this.log.error({ err: error, streams: this.streams.size }, 'stream thread died; its streams are closed');
    for (const id of [...this.streams.keys()]) this.closed(id);
    if (this.draining) return;
    this.thread = this.startThread();
    const at = this.listeningOn;
    if (at) void this.thread.listen(at.port, at.host).catch((e) => this.log.error({ err: e }, 'stream thread could not listen again'));
  }
}
