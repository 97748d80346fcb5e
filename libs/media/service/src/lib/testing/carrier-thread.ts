import { Worker } from 'node:worker_threads';

/**
 * A carrier in a thread of its own, so the times it reads frames at are not the test thread's (which tests hold on
 * purpose, as a long pause of the media worker's main thread): it connects to `url`, and posts back each text frame
 * with its arrival time.
 */
const CARRIER = `
const { parentPort, workerData } = require('node:worker_threads');
const WebSocket = require(workerData.ws);
const ws = new WebSocket(workerData.url);
ws.on('open', () => parentPort.postMessage({ open: true }));
ws.on('message', (data) => parentPort.postMessage({ at: performance.now() + performance.timeOrigin, frame: data.toString() }));
ws.on('close', (code) => parentPort.postMessage({ closed: code }));
parentPort.on('message', (frame) => ws.send(frame));
`;

export interface CarrierThread {
  /** Every text frame received, with its arrival time (performance.timeOrigin + performance.now(), ms). */
  received: { at: number; frame: string }[];
  send(frame: string): void;
  closed: Promise<number>;
  stop(): Promise<number>;
}

/** Every carrier thread started: stopCarrierThreads() ends them after each test, whatever its outcome. */
const carriers = new Set<Worker>();

export function carrierThread(url: string): Promise<CarrierThread> {
  const worker = new Worker(CARRIER, { eval: true, workerData: { url, ws: require.resolve('ws') } });
  carriers.add(worker);
  const received: CarrierThread['received'] = [];
  let closed!: (code: number) => void;
  const c: CarrierThread = {
    received,
    send: (frame) => worker.postMessage(frame),
    closed: new Promise((resolve) => (closed = resolve)),
    stop: () => worker.terminate(),
  };
  return new Promise((resolve) => {
    worker.on('message', (m: { open?: boolean; at?: number; frame?: string; closed?: number }) => {
      if (m.open) resolve(c);
      if (m.frame !== undefined) received.push({ at: m.at ?? 0, frame: m.frame });
      if (m.closed !== undefined) closed(m.closed);
    });
  });
}

/** Ends every carrier thread still running (a live thread keeps jest from exiting). */
export async function stopCarrierThreads(): Promise<void> {
  await Promise.all([...carriers].map((worker) => worker.terminate()));
  carriers.clear();
}
