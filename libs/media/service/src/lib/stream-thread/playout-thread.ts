/**
 * The media worker's stream thread: it owns the carrier WebSockets and plays the agent's frames to them one per
 * 20 ms. It runs in a worker thread of its own so that the main thread's pauses (scavenges of a heap full of calls,
 * control-plane work, a burst of synthesis) never reach the carrier as late frames: the main thread keeps a small
 * lead of frames queued here, and this thread, whose heap holds little more than that queue, sends them on time.
 *
 * Carrier protocols stay on the main thread (its adapters format and parse the frames); here a frame is a string.
 * Only node built-ins and `ws` are imported, so the file runs as is in a worker (compiled, or type-stripped in tests).
 */
import { createServer } from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getPriority, setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { WebSocket, WebSocketServer } from 'ws';
import type { FromThread, StreamThreadData, ToThread } from './messages';

const FRAME_MS = 20;
/** The thread's cycle: the playing streams' shared clock (a frame goes out on the tick nearest its slot). */
const TICK_MS = 5;
const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** At most this much of a lateness is made up per frame. */
const MAX_CATCH_UP_MS = 4;
const STREAM_PATH = /^\/streams\/([a-z0-9_-]+)\/?(\?.*)?$/;
const STATS_EVERY_MS = 1_000;
/** How long a stopping thread waits for carriers to answer its close frames. */
const CLOSE_GRACE_MS = 1_000;

const data = workerData as StreamThreadData;
if (!parentPort) throw new Error('playout-thread.ts runs as a worker thread (StreamThread starts it)');
const main = parentPort;
const carriers = new Set(data.carriers);
const paths = new Map(Object.entries(data.paths));

// Events for the main thread, posted together once a cycle (below): one message per frame would cost both threads
// more than the frames themselves.
let outbox: FromThread[] = [];
let inbound: { ev: 'frames'; ids: number[]; frames: string[] } | undefined;
let flushing = false;
function post(event: FromThread): void {
  inbound = undefined;
  outbox.push(event);
  scheduleFlush();
}
function received(id: number, frame: string): void {
  if (!inbound) {
    inbound = { ev: 'frames', ids: [], frames: [] };
    outbox.push(inbound);
  }
  inbound.ids.push(id);
  inbound.frames.push(frame);
  scheduleFlush();
}
/** While the thread cycles, each cycle posts what its round of I/O brought; otherwise (no stream open) at once. */
function scheduleFlush(): void {
  if (cycling || flushing) return;
  flushing = true;
  setImmediate(flush);
}
function flush(): void {
  flushing = false;
  if (!outbox.length) return;
  const events = outbox;
  outbox = [];
  inbound = undefined;
  main.postMessage(events);
}

let sent = 0;
let late = 0;
/** |Δ − 20 ms| between consecutive frames of a run, as sent: the pacing this thread achieved. */
let jitterMs: number[] = [];

/** Streams with audio queued: each tick sends those whose slot has come. */
const playing = new Set<Stream>();
let cycling = false;
let tickAt = 0;

/**
 * While any stream is open the thread runs in cycles of one tick (TICK_MS): it posts to the main thread what the
 * last round of I/O read, sleeps to the tick (Atomics.wait: a blocking wait, not a spin), sends the frames due, and
 * returns to its event loop for one round of I/O that does not wait (a pending setImmediate makes libuv poll with a
 * zero timeout), in which every socket that became readable meanwhile is read at once and the main thread's
 * messages arrive. Left to its event loop, the thread woke for nearly every carrier frame (1,300 times a second at
 * 100 calls, each wake-up costing more than the frame); in cycles it wakes 200 times a second whatever the calls.
 * A carrier frame waits at most a cycle in the socket before it is read and posted (the 4 ms batch it waited
 * before), and the main thread's audio, marks and clears at most a cycle before they are applied.
 */
function startCycling(): void {
  if (cycling) return;
  cycling = true;
  flushing = false;
  tickAt = performance.now() + TICK_MS;
  setImmediate(cycle);
}

function cycle(): void {
  const open = streams.size > 0;
  if (!open) cycling = false;
  flush();
  if (!open) return;
  const left = tickAt - performance.now();
  if (left > 0) Atomics.wait(sleeper, 0, 0, left);
  tick();
  setImmediate(cycle);
}

/** The tick nearest `at`: slots sit on the ticks, so a tick's own jitter never moves a frame to its neighbour. */
function onGrid(at: number): number {
  return tickAt + Math.round((at - tickAt) / TICK_MS) * TICK_MS;
}

function tick(): void {
  const now = performance.now();
  for (const stream of playing) stream.onTick(now);
  // On a fixed grid: a late tick does not shift the ones after it.
  do tickAt += TICK_MS;
  while (tickAt <= now);
}

/** One carrier stream: its socket and the agent's frames (and marks) waiting for their slot. */
class Stream {
  private queue: { mark: boolean; frame: string }[] = [];
  private head = 0;
  /** When the next frame is due (performance.now ms). */
  private nextAt = 0;
  /** When the last audio frame went out, while a run goes on (0: the next frame starts a run). */
  private lastSentAt = 0;

  // Plain fields: the file runs type-stripped under the tests, which has no parameter properties.
  readonly id: number;
  private readonly ws: WebSocket;

  constructor(id: number, ws: WebSocket) {
    this.id = id;
    this.ws = ws;
  }

  audio(frame: string): void {
    this.queue.push({ mark: false, frame });
    if (playing.has(this)) return;
    playing.add(this);
    const now = performance.now();
    // Idle past its slot (the answer starts, or synthesis fell behind): a new run starts now.
    if (now >= this.nextAt) {
      this.nextAt = now;
      this.lastSentAt = 0;
    } else this.nextAt = onGrid(this.nextAt);
    this.onTick(now);
  }

  mark(frame: string): void {
    if (playing.has(this)) this.queue.push({ mark: true, frame });
    else this.send(frame);
  }

  clear(frame: string): void {
    this.reset();
    this.send(frame);
  }

  text(frame: string): void {
    this.send(frame);
  }

  close(code: number, reason: string): void {
    this.reset();
    this.ws.close(code, reason);
  }

  reset(): void {
    playing.delete(this);
    this.lastSentAt = 0;
    this.queue = [];
    this.head = 0;
  }

  /** Sends the frame whose slot has come (within half a tick) and the marks behind it; idle once none is queued. */
  onTick(now: number): void {
    const item = this.queue[this.head];
    if (!item) return this.reset();
    if (now < this.nextAt - TICK_MS / 2) return;
    if (now - this.nextAt > FRAME_MS) {
      // This thread was held past a whole frame: the grid restarts.
      late++;
      this.nextAt = now;
    }
    this.head++;
    this.send(item.frame);
    sent++;
    // Timed as it left, not by the tick: a tick sends many streams' frames, and a pause within it is pacing too.
    const sentAt = performance.now();
    if (this.lastSentAt) jitterMs.push(Math.abs(sentAt - this.lastSentAt - FRAME_MS));
    this.lastSentAt = sentAt;
    while (this.queue[this.head]?.mark) this.send(this.queue[this.head++].frame);
    // A slightly late frame is made up a few ms per frame, so the carrier sees no short gap.
    this.nextAt = onGrid(Math.max(this.nextAt + FRAME_MS, now + FRAME_MS - MAX_CATCH_UP_MS));
    if (this.head === this.queue.length) {
      // Idle, keeping its slot: audio queued before that slot continues the run.
      playing.delete(this);
      this.queue = [];
      this.head = 0;
    } else if (this.head >= 64) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  private send(frame: string): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(frame);
  }
}

const streams = new Map<number, Stream>();
let nextId = 1;
let draining = false;
let closed = Promise.resolve();
const wss = new WebSocketServer({ noServer: true, maxPayload: data.maxPayload });
const http = createServer((_req, res) => res.writeHead(426, { 'content-type': 'text/plain' }).end('WebSocket only\n'));
http.on('upgrade', (req: IncomingMessage, socket, head) => {
  const url = req.url ?? '';
  const named = STREAM_PATH.exec(url)?.[1];
  const carrier = named && carriers.has(named) ? named : paths.get(url.split('?')[0]);
  if (draining) return void socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n');
  if (!carrier) return void socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
  wss.handleUpgrade(req, socket, head, (ws) => accept(ws, carrier));
});

function accept(ws: WebSocket, carrier: string): void {
  const stream = new Stream(nextId++, ws);
  streams.set(stream.id, stream);
  startCycling();
  post({ ev: 'open', id: stream.id, carrier });
  ws.on('message', (frame, isBinary) => {
    if (!isBinary) received(stream.id, frame.toString());
  });
  ws.on('close', () => {
    stream.reset();
    streams.delete(stream.id);
    post({ ev: 'closed', id: stream.id });
  });
  ws.on('error', (e) => post({ ev: 'error', id: stream.id, message: e.message }));
}

/** Refuses new streams; `closed` settles once the listener and every connection it had are closed. */
function drain(): void {
  if (draining) return;
  draining = true;
  if (http.listening) closed = new Promise((resolve) => http.close(() => resolve()));
}

/**
 * The thread's own priority (Linux schedules threads, and setPriority without a pid names the calling one): on cores
 * shared with the engine, the control plane and the database, a tick woken late is a late frame for every stream it
 * serves, and a thread that wakes 200 times a second for well under a millisecond each costs the others little.
 * Below the process's nice it needs CAP_SYS_NICE (root, or the capability); without, the thread stays as it was.
 */
if (data.nice !== undefined) {
  try {
    setPriority(data.nice);
    post({ ev: 'priority', nice: getPriority(), taken: true });
  } catch (error) {
    post({ ev: 'priority', nice: getPriority(), taken: false, reason: (error as Error).message });
  }
}

const stats = setInterval(() => {
  if (sent || late) post({ ev: 'stats', sent, late, jitterMs });
  sent = late = 0;
  jitterMs = [];
}, STATS_EVERY_MS);

main.on('message', (ops: ToThread[]) => {
  for (const op of ops) {
    switch (op.op) {
      case 'audio':
        streams.get(op.id)?.audio(op.frame);
        break;
      case 'mark':
        streams.get(op.id)?.mark(op.frame);
        break;
      case 'clear':
        streams.get(op.id)?.clear(op.frame);
        break;
      case 'close':
        streams.get(op.id)?.close(op.code, op.reason);
        break;
      case 'text':
        streams.get(op.id)?.text(op.frame);
        break;
      case 'listen':
        http.once('error', (e) => post({ ev: 'listen_failed', message: e.message }));
        http.listen(op.port, op.host, () => post({ ev: 'listening', port: (http.address() as AddressInfo).port }));
        break;
      case 'drain':
        drain();
        post({ ev: 'draining' });
        break;
      case 'stop':
        drain();
        clearInterval(stats);
        for (const stream of streams.values()) stream.close(1001, 'media worker shutting down');
        // A carrier that does not answer the close handshake is cut off rather than holding the shutdown for ws's 30 s.
        setTimeout(() => {
          for (const ws of wss.clients) ws.terminate();
        }, CLOSE_GRACE_MS).unref();
        wss.close(() => void closed.then(() => post({ ev: 'stopped' })));
        break;
    }
  }
});
