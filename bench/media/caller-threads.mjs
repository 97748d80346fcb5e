// The load generator's callers spread over worker threads (--caller-threads). The carrier's side of every call is
// its media stream: a frame out and a frame in every 20 ms, timestamped as it arrives. In one event loop a hundred
// callers' frames queue behind each other, and the readings carry that queue (the loop's p99 was 6-13 ms at 100-150
// calls on 2 shared cores): the instrument's lateness, not the platform's. A real carrier spreads streams over many
// machines; here each thread carries a shard of the streams with its own loop and clock. Call control (the API,
// Twilio's REST callbacks) stays in the main thread, where the fake Twilio server is.
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { failCall, mergeResults, verifyEnded } from './caller.mjs';

/**
 * A call driven from this thread whose line (media stream or browser socket) runs in a caller thread: `line` is
 * CallerThreads.line(index) (open(init, callId) → a refusal's reason or undefined, hangUp() → whether the caller was
 * still on the line, stop(), and `isOpen`). PhoneCall and BrowserCall add how the call is placed.
 */
export class ThreadedCall {
  constructor({ index, api, agentId, results, line }) {
    Object.assign(this, { index, api, agentId, results, line });
    /** Set by CallerThreads.collect when the call's line never carried agent audio. */
    this.heardNothing = false;
  }

  get open() {
    return this.line.isOpen;
  }

  fail(reason) {
    failCall(this, reason);
  }

  verifyEnded() {
    return verifyEnded(this);
  }
}

/** Calls per caller thread by default: a shard light enough that its loop answers within a millisecond or two. */
export const CALLS_PER_THREAD = 25;
const MAX_THREADS = 8;

/** The default number of caller threads for `n` calls. */
export const callerThreadsFor = (n) => Math.min(MAX_THREADS, Math.ceil(n / CALLS_PER_THREAD));

export class CallerThreads {
  /**
   * `count` threads, each running caller-thread.mjs with `setup` (what its lines need: { kind: 'phone' or 'browser',
   * dist, sounds, voice, llmMs, ttsMs, explain }); calls are dealt to them round-robin by index.
   */
  constructor(count, setup) {
    this.pending = new Map();
    this.nextId = 0;
    this.openLines = new Set();
    this.workers = Array.from({ length: count }, () => {
      const worker = new Worker(new URL('./caller-thread.mjs', import.meta.url), { workerData: { ...setup, mainOrigin: performance.timeOrigin } });
      worker.on('message', (message) => this.onMessage(message));
      worker.on('error', (error) => this.failAll(error));
      return worker;
    });
  }

  onMessage(message) {
    if (message.type === 'closed') return this.openLines.delete(message.index);
    const waiter = this.pending.get(message.id);
    this.pending.delete(message.id);
    if (message.error) waiter?.reject(new Error(message.error));
    else waiter?.resolve(message.value);
  }

  failAll(error) {
    for (const waiter of this.pending.values()) waiter.reject(error);
    this.pending.clear();
  }

  request(worker, message) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ ...message, id });
    });
  }

  broadcast(message) {
    return Promise.all(this.workers.map((worker) => this.request(worker, message)));
  }

  /** Call `index`'s line, as PhoneCall or BrowserCall drives it. */
  line(index) {
    const worker = this.workers[index % this.workers.length];
    const { openLines } = this;
    const open = async (init, callId) => {
      const refused = await this.request(worker, { type: 'open', index, callId, init });
      if (!refused) openLines.add(index);
      return refused;
    };
    return {
      get isOpen() {
        return openLines.has(index);
      },
      open,
      hangUp: () => this.request(worker, { type: 'hangUp', index }),
      stop: () => this.request(worker, { type: 'stop', index }),
    };
  }

  /** Starts or ends the measured window in every thread. */
  measure(on) {
    return this.broadcast({ type: 'measure', on });
  }

  /**
   * Adds every thread's figures to `results`, marks `calls` that never heard the agent, and resolves to
   * { loopP99: the worst of the threads' event-loop delay p99 over the window (ms), callers: how they ran }.
   */
  async collect(results, calls) {
    let loopP99 = 0;
    const shards = await this.broadcast({ type: 'collect' });
    for (const shard of shards) {
      mergeResults(results, shard.results, shard.shift);
      for (const index of shard.silent) calls[index].heardNothing = true;
      loopP99 = Math.max(loopP99, shard.loopP99);
    }
    const priorities = [...new Set(shards.map((shard) => shard.priority))].join('; ');
    return { loopP99, callers: `${this.workers.length} caller thread${this.workers.length > 1 ? 's' : ''} of up to ${Math.ceil(calls.length / this.workers.length)} calls, ${priorities}` };
  }

  stop() {
    return Promise.all(this.workers.map((worker) => worker.terminate()));
  }
}
