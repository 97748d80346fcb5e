import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { FromThread, StreamThreadData, ToThread } from './messages';
// The thread's file is loaded by path, never imported: this brings it into the compilation, so builds emit it.
import type {} from './playout-thread';

/** What the stream thread reports, stream by stream. */
export interface StreamThreadEvents {
  open(id: number, carrier: string): void;
  frame(id: number, frame: string): void;
  closed(id: number): void;
  error(id: number, message: string): void;
  /** Since the last report: agent frames sent, those sent more than one frame late, and their pacing (ms). */
  stats(sent: number, late: number, jitterMs: number[]): void;
  /** The thread died (its streams are gone); `error` says why. */
  exit(error: Error): void;
  /** Whether the thread took the priority it was started with (`nice`: what it has); `reason` when not. */
  priority?(nice: number, taken: boolean, reason?: string): void;
}

/**
 * How long what is sent waits to be posted with what follows: the engine keeps STREAM_LEAD_FRAMES queued in the
 * thread, so its frames can wait; a clear does not.
 */
const BATCH_MS = 4;
/** The longest a stop waits for the thread to close its sockets (it cuts off carriers after 1 s). */
const STOP_BOUND_MS = 3_000;

// Compiled, the thread is the .js beside this file; under the tests, Node runs the .ts source (type stripping).
const THREAD_FILE = join(__dirname, `playout-thread${__filename.slice(__filename.lastIndexOf('.'))}`);

/**
 * The main thread's handle on the stream thread (playout-thread.ts): what it sends is batched and posted every
 * BATCH_MS, in order; what it receives is dispatched to `events`.
 */
export class StreamThread {
  private readonly worker: Worker;
  private ops: ToThread[] = [];
  private listening: { resolve: (port: number) => void; reject: (error: Error) => void } | undefined;
  private stopped: (() => void) | undefined;
  private drained: (() => void) | undefined;
  private ended = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(data: StreamThreadData, private readonly events: StreamThreadEvents) {
    this.worker = new Worker(THREAD_FILE, {
      workerData: data,
      // The .ts source has no package type to tell Node it is a module: it finds out by itself, quietly.
      execArgv: THREAD_FILE.endsWith('.ts') ? ['--disable-warning=MODULE_TYPELESS_PACKAGE_JSON'] : [],
    });
    this.worker.on('message', (events: FromThread[]) => {
      for (const event of events) this.dispatch(event);
    });
    this.worker.on('error', (error) => this.died(error));
    this.worker.on('exit', (code) => this.died(new Error(`stream thread exited (${code})`)));
  }

  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.listening = { resolve, reject };
      this.send({ op: 'listen', port, host });
    });
  }

  send(op: ToThread): void {
    if (this.ended) return;
    // Batched like the thread's events; a clear goes at once (the caller is talking over the agent).
    if (this.ops.push(op) === 1) this.timer = setTimeout(() => this.flush(), op.op === 'clear' ? 0 : BATCH_MS);
    else if (op.op === 'clear') {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.flush(), 0);
    }
  }

  /** Resolves once the thread refuses new streams (live ones go on). */
  drain(): Promise<void> {
    if (this.ended) return Promise.resolve();
    return new Promise((resolve) => {
      this.drained = resolve;
      this.send({ op: 'drain' });
      this.flush();
    });
  }

  /** Closes every stream and the server, then ends the thread. */
  async stop(): Promise<void> {
    if (this.ended) return;
    let bound: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.stopped = resolve;
      this.send({ op: 'stop' });
      // The thread closes its sockets within about a second; past STOP_BOUND_MS it is ended regardless.
      bound = setTimeout(resolve, STOP_BOUND_MS);
    });
    clearTimeout(bound);
    this.ended = true;
    await this.worker.terminate();
  }

  private flush(): void {
    clearTimeout(this.timer);
    const ops = this.ops;
    this.ops = [];
    if (!this.ended) this.worker.postMessage(ops);
  }

  private dispatch(event: FromThread): void {
    switch (event.ev) {
      case 'frames':
        for (let i = 0; i < event.ids.length; i++) this.events.frame(event.ids[i], event.frames[i]);
        return;
      case 'open':
        return this.events.open(event.id, event.carrier);
      case 'closed':
        return this.events.closed(event.id);
      case 'error':
        return this.events.error(event.id, event.message);
      case 'stats':
        return this.events.stats(event.sent, event.late, event.jitterMs);
      case 'listening':
        return this.listening?.resolve(event.port);
      case 'listen_failed':
        return this.listening?.reject(new Error(event.message));
      case 'draining':
        return this.drained?.();
      case 'stopped':
        return this.stopped?.();
      case 'priority':
        return this.events.priority?.(event.nice, event.taken, event.reason);
    }
  }

  private died(error: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.listening?.reject(error);
    this.drained?.();
    this.stopped?.();
    this.events.exit(error);
  }
}
