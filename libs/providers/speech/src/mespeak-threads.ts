import { dirname, extname, join } from 'node:path';
import { MessageChannel, MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { MespeakLine, MespeakWorkerData } from './mespeak-line';
import type { MespeakReply } from './mespeak-worker';
import { WorkerRequest } from './speech-worker-pool';

/** The mespeak worker's script beside this file: `.js` when compiled, `.ts` under jest (Node 24 strips its types). */
export const MESPEAK_WORKER = join(__dirname, `mespeak-worker${extname(__filename)}`);

/**
 * Lines one mespeak realm speaks before it is replaced. mespeak 2.0.2 returns truncated audio on the 80th `speak`
 * in a realm and throws or aborts the process after (measured; the same count for one-word and 30-word lines, and
 * loading voices does not count), so half of that, plus the warm-up line, is a wide margin.
 */
export const MESPEAK_RECYCLE_AFTER = 40;
/** The most a caller may configure. */
export const MESPEAK_MAX_RECYCLE_AFTER = 60;

/** A mespeak worker's data: the package's files as this thread resolves them, and the voices to load first. */
export function mespeakWorkerData(preload: string[]): MespeakWorkerData {
  const root = dirname(require.resolve('mespeak/package.json'));
  return { main: join(root, 'src', 'index.js'), config: join(root, 'src', 'mespeak_config.json'), voices: join(root, 'voices'), preload };
}

interface SyncWorker {
  worker: Worker;
  port: MessagePort;
  posted: Int32Array;
  lines: number;
}

let syncWorker: SyncWorker | undefined;
let syncIds = 0;

/**
 * `line` spoken by a mespeak worker while this thread blocks until it answers: for synchronous test tooling (the
 * simulated caller's speech), never the call path. Recycled like the pool's workers.
 */
export function speakMespeakSync(line: MespeakLine, timeoutMs = 30_000): ArrayBuffer {
  if (!syncWorker || syncWorker.lines >= MESPEAK_RECYCLE_AFTER) syncWorker = startSyncWorker(syncWorker);
  const current = syncWorker;
  current.lines++;
  const id = ++syncIds;
  current.worker.postMessage({ id, job: line } satisfies WorkerRequest<MespeakLine>);
  const until = Date.now() + timeoutMs;
  for (;;) {
    const seen = Atomics.load(current.posted, 0);
    const received = receiveMessageOnPort(current.port);
    if (received) {
      const reply = received.message as MespeakReply;
      if ('ready' in reply || reply.id !== id) continue;
      if ('result' in reply) return reply.result;
      syncWorker = startSyncWorker(current);
      throw new Error(reply.error);
    }
    // A crashed worker never posts: the wait times out.
    if (Date.now() >= until || Atomics.wait(current.posted, 0, seen, until - Date.now()) === 'timed-out') {
      syncWorker = startSyncWorker(current);
      throw new Error(`mespeak worker did not answer within ${timeoutMs} ms`);
    }
  }
}

function startSyncWorker(previous: SyncWorker | undefined): SyncWorker {
  if (previous) void previous.worker.terminate();
  const { port1, port2 } = new MessageChannel();
  const posted = new Int32Array(new SharedArrayBuffer(4));
  const workerData: MespeakWorkerData = { ...mespeakWorkerData([]), sync: { port: port2, posted } };
  const worker = new Worker(MESPEAK_WORKER, { workerData, transferList: [port2] });
  worker.on('error', () => undefined); // the blocked caller sees it as a timeout
  worker.unref();
  return { worker, port: port1, posted, lines: 0 };
}
