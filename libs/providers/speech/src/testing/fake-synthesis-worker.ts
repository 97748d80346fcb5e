// A worker for SpeechWorkerPool's tests: it answers each job with which worker served it and how many jobs that
// worker had served, and fails the ways a real synthesis worker can when a job asks it to. Like
// mespeak-worker.ts, Node runs it as it is, so it loads node: modules with require.
import type { WorkerReply, WorkerRequest } from '../speech-worker-pool';

const { parentPort, workerData } = require('node:worker_threads') as typeof import('node:worker_threads');

export interface FakeSynthesisJob {
  text: string;
  /** Busy for this long (the thread blocked, as synthesis blocks it). */
  busyMs?: number;
  /** throw: an uncaught exception; exit: the thread exits; hang: never answers; error: answers with an error. */
  fail?: 'throw' | 'exit' | 'hang' | 'error';
  /** The workers (numbered by start, from 1) on which `fail` applies; every one when absent. */
  failOn?: number[];
}

export interface FakeSynthesisResult {
  text: string;
  worker: number;
  served: number;
  /** When the worker took and finished the job (ms since the epoch). */
  startedAt: number;
  endedAt: number;
}

/** `worker`: this worker's number; `failStart`: it throws while loading, as a missing library would. */
export interface FakeSynthesisWorkerData {
  worker: number;
  failStart?: boolean;
}

if (!parentPort) throw new Error('fake-synthesis-worker runs in a worker thread only');
const port = parentPort;
const { worker, failStart } = workerData as FakeSynthesisWorkerData;
if (failStart) throw new Error('cannot load the engine');
let served = 0;
const blocker = new Int32Array(new SharedArrayBuffer(4));

port.on('message', ({ id, job }: WorkerRequest<FakeSynthesisJob>) => {
  const startedAt = Date.now();
  if (job.busyMs) Atomics.wait(blocker, 0, 0, job.busyMs);
  const fails = job.fail && (!job.failOn || job.failOn.includes(worker));
  if (fails && job.fail === 'throw') throw new Error(`worker ${worker} crashed`);
  if (fails && job.fail === 'exit') process.exit(3);
  if (fails && job.fail === 'hang') for (;;);
  const reply: WorkerReply<FakeSynthesisResult> = fails ? { id, error: `worker ${worker} failed` } : { id, result: { text: job.text, worker, served: ++served, startedAt, endedAt: Date.now() } };
  port.postMessage(reply);
});
port.postMessage({ ready: true } satisfies WorkerReply<FakeSynthesisResult>);
