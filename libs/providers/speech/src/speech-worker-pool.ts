import { Worker } from 'node:worker_threads';
import { SpeechError } from './speech-error';

/** What a pool sends its worker: one job. */
export interface WorkerRequest<J> {
  id: number;
  job: J;
}

/** What a pool's worker answers: once `ready` after loading, then one reply per request, by id. */
export type WorkerReply<R> = { ready: true } | { id: number; result: R } | { id: number; error: string };

export interface SpeechWorkerPoolOptions {
  /** The provider's name, in errors. */
  provider: string;
  /** The worker's script (a file Node can run as it is). */
  entry: string;
  /** Its workerData, read at each spawn (a replacement may load more than the first worker did). */
  workerData: () => unknown;
  /** Jobs running at once (one per worker; a standby waiting to take over does not run any). */
  size: number;
  /** Jobs a worker runs before it is retired; its successor is started when it is half way there. */
  recycleAfter: number;
  /** A job unanswered this long counts as a failure of its worker. */
  deadlineMs: number;
  /** A worker not ready this long counts as failed to start. */
  startTimeoutMs: number;
  /** Jobs that may wait for a worker; more are refused at once. */
  maxQueue: number;
}

export interface SpeechWorkerPoolStats {
  started: number;
  recycled: number;
  failed: number;
}

interface Task<J, R> {
  job: J;
  attempts: number;
  settled: boolean;
  resolve(result: R): void;
  reject(error: SpeechError): void;
}

interface PooledWorker<J, R> {
  thread: Worker;
  state: 'starting' | 'idle' | 'busy';
  jobs: number;
  ready: Promise<void>;
  onReady(): void;
  onStartFailure(error: Error): void;
  task?: Task<J, R>;
  taskId?: number;
  timer?: NodeJS.Timeout;
  gone: boolean;
}

/**
 * CPU-bound synthesis off the event loop: jobs go FIFO to a pool of worker threads, at most `size` at once. A
 * worker is retired after `recycleAfter` jobs (a library that breaks after some number of calls never reaches it)
 * and its successor is warm before then, so recycling costs no latency. A worker that errors, crashes, exits or
 * misses the deadline is terminated and replaced, and its job retried once, first in the queue, on another worker;
 * a second failure rejects with a SpeechError. An aborted job leaves the queue at once; a running one is rejected
 * at once and its result dropped. Idle workers do not keep the process alive.
 */
export class SpeechWorkerPool<J, R> {
  private readonly workers = new Set<PooledWorker<J, R>>();
  private readonly queue: Task<J, R>[] = [];
  private nextId = 0;
  private startFailures = 0;
  private closed = false;
  readonly stats: SpeechWorkerPoolStats = { started: 0, recycled: 0, failed: 0 };

  constructor(private readonly options: SpeechWorkerPoolOptions) {}

  /** Starts the workers (if not yet) and resolves once they are ready. */
  async warmUp(): Promise<void> {
    this.fill();
    await Promise.all([...this.workers].map((w) => w.ready));
  }

  run(job: J, signal: AbortSignal): Promise<R> {
    const { provider, maxQueue } = this.options;
    if (this.closed) return Promise.reject(new SpeechError(`${provider}: closed`, { code: 'connection', provider }));
    if (signal.aborted) return Promise.reject(aborted(provider));
    // The engine gives a voice 3 s to start speaking: a longer wait than the queue allows would only delay its fallback.
    if (this.queue.length >= maxQueue) {
      return Promise.reject(new SpeechError(`${provider}: busy (${maxQueue} lines waiting)`, { code: 'timeout', provider }));
    }
    return new Promise<R>((resolve, reject) => {
      const onAbort = () => {
        const at = this.queue.indexOf(task);
        if (at >= 0) this.queue.splice(at, 1);
        task.reject(aborted(provider));
      };
      const task: Task<J, R> = {
        job,
        attempts: 0,
        settled: false,
        resolve: (result) => settle(() => resolve(result)),
        reject: (error) => settle(() => reject(error)),
      };
      const settle = (done: () => void) => {
        if (task.settled) return;
        task.settled = true;
        signal.removeEventListener('abort', onAbort);
        done();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(task);
      this.pump();
    });
  }

  /** Terminates every worker; waiting and running jobs are rejected. */
  async close(): Promise<void> {
    const { provider } = this.options;
    this.closed = true;
    const running = [...this.workers].flatMap((w) => (w.task ? [w.task] : []));
    for (const task of [...this.queue.splice(0), ...running]) task.reject(new SpeechError(`${provider}: closed`, { code: 'connection', provider }));
    await Promise.all([...this.workers].map((w) => this.remove(w)));
  }

  private pump(): void {
    if (this.closed) return;
    this.fill();
    while (this.queue.length > 0 && this.count('busy') < this.options.size) {
      // The oldest idle worker first: the standby stays fresh until its predecessor is retired.
      const idle = [...this.workers].filter((w) => w.state === 'idle').sort((a, b) => b.jobs - a.jobs)[0];
      const task = idle && this.queue.shift();
      if (!task) return;
      this.dispatch(idle, task);
    }
  }

  /** Keeps `size` workers that are not about to be retired (starting, or below half their jobs). */
  private fill(): void {
    if (this.closed) return;
    const fresh = [...this.workers].filter((w) => w.jobs < this.options.recycleAfter / 2).length;
    for (let i = fresh; i < this.options.size; i++) this.spawn();
  }

  private spawn(): void {
    const thread = new Worker(this.options.entry, { workerData: this.options.workerData() });
    const w = { thread, state: 'starting', jobs: 0, gone: false } as PooledWorker<J, R>;
    w.ready = new Promise<void>((resolve, reject) => ([w.onReady, w.onStartFailure] = [resolve, reject]));
    w.ready.catch(() => undefined); // only warmUp awaits it
    this.workers.add(w);
    this.stats.started++;
    w.timer = setTimeout(() => this.fail(w, new Error(`not ready within ${this.options.startTimeoutMs} ms`)), this.options.startTimeoutMs);
    thread.on('message', (reply: WorkerReply<R>) => {
      if ('ready' in reply) {
        clearTimeout(w.timer);
        w.state = 'idle';
        this.startFailures = 0;
        thread.unref();
        w.onReady();
        this.pump();
      } else if (reply.id === w.taskId) {
        if ('error' in reply) this.fail(w, new Error(reply.error));
        else this.finish(w, reply.result);
      }
    });
    thread.on('error', (error) => this.fail(w, error));
    thread.on('exit', (code) => this.fail(w, new Error(`worker exited (code ${code})`)));
  }

  private dispatch(w: PooledWorker<J, R>, task: Task<J, R>): void {
    task.attempts++;
    w.state = 'busy';
    w.task = task;
    w.taskId = ++this.nextId;
    // A busy worker keeps the process alive: someone awaits its answer.
    w.thread.ref();
    w.timer = setTimeout(() => this.fail(w, new Error(`no answer within ${this.options.deadlineMs} ms`)), this.options.deadlineMs);
    w.thread.postMessage({ id: w.taskId, job: task.job } satisfies WorkerRequest<J>);
  }

  private finish(w: PooledWorker<J, R>, result: R): void {
    clearTimeout(w.timer);
    const task = w.task;
    w.task = w.taskId = undefined;
    w.state = 'idle';
    w.jobs++;
    w.thread.unref();
    task?.resolve(result); // a no-op when it was aborted meanwhile: the result is dropped
    if (w.jobs >= this.options.recycleAfter) {
      this.stats.recycled++;
      void this.remove(w);
    }
    this.pump();
  }

  /** The worker is finished with: terminated and replaced; its job retried once, else rejected. */
  private fail(w: PooledWorker<J, R>, error: Error): void {
    if (w.gone) return;
    const { provider } = this.options;
    const { state, task } = w;
    this.stats.failed++;
    void this.remove(w);
    if (state === 'starting') {
      w.onStartFailure(error);
      // A worker that cannot even start (a missing or broken library) would be respawned in a loop: after two in a
      // row, the next attempt waits for the next line, and with no worker left the waiting lines fail.
      if (++this.startFailures >= 2) {
        if (this.count('idle') + this.count('busy') === 0) {
          for (const queued of this.queue.splice(0)) {
            queued.reject(new SpeechError(`${provider}: could not start a worker: ${error.message}`, { code: 'invalid_response', provider, cause: error }));
          }
        }
        return;
      }
    } else if (task && !task.settled) {
      if (task.attempts < 2) this.queue.unshift(task);
      else task.reject(new SpeechError(`${provider}: ${error.message} (also after a retry on a fresh worker)`, { code: 'invalid_response', provider, cause: error }));
    }
    this.pump();
  }

  private async remove(w: PooledWorker<J, R>): Promise<void> {
    if (w.gone) return;
    w.gone = true;
    clearTimeout(w.timer);
    this.workers.delete(w);
    await w.thread.terminate();
  }

  private count(state: PooledWorker<J, R>['state']): number {
    let n = 0;
    for (const w of this.workers) if (w.state === state) n++;
    return n;
  }
}

function aborted(provider: string): SpeechError {
  return new SpeechError(`${provider}: synthesis aborted`, { code: 'aborted', provider });
}
