// One caller thread (caller-threads.mjs): the media streams of its shard of calls, each a PhoneLine talking and
// listening in real time, and the figures they add to while the window is measured. Requests from the main thread
// carry an `id` and are answered with it; a stream the platform closes is reported unasked ({ type: 'closed' }).
import { getPriority, setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { agentSpeech } from './agent-speech.mjs';
import { loadLibs } from './build.mjs';
import { measuredWindow, newResults } from './caller.mjs';
import { PHONE_RATE, PhoneLine } from './phone-call.mjs';
import { ANSWERS, GREETING } from './vendor-fakes.mjs';

const { dist, voice, llmMs, ttsMs, explain, mainOrigin } = workerData;
// Buffers arrive as plain Uint8Arrays: the stream encodes them with Buffer's base64.
const asBuffers = (frames) => frames.map((f) => Buffer.from(f.buffer, f.byteOffset, f.byteLength));
const sounds = { speech: asBuffers(workerData.sounds.speech), noise: asBuffers(workerData.sounds.noise) };
/**
 * The carrier's side runs on the carrier's machines, not beside the platform: here its readings would otherwise wait
 * behind the platform's processes on the shared cores. So each caller thread asks the scheduler for the priority the
 * media worker's stream thread has (MEDIA_STREAM_NICE's default); where it may not, it keeps its own and says so.
 */
const CALLER_NICE = -10;
let priority = `nice ${CALLER_NICE}`;
try {
  setPriority(CALLER_NICE);
} catch (error) {
  priority = `priority not raised (${error.code ?? error.message}; needs root or CAP_SYS_NICE): nice ${getPriority()}`;
}
const libs = loadLibs(dist);
const speechOf = agentSpeech({ libs, voice, greeting: GREETING, answers: ANSWERS, rate: PHONE_RATE });
const connect = (init) => libs.twilio.FakeMediaStream.connect(init);
const results = newResults({ explain });
const lines = new Map();
const window = measuredWindow(results);

const handlers = {
  async open({ index, callId, init }) {
    const line = new PhoneLine({ index, results, llmMs, ttsMs, sounds, speechOf, connect, audio: libs.audio });
    // For --explain's stale frames.
    line.callId = callId;
    lines.set(index, line);
    return line.start(init, () => parentPort.postMessage({ type: 'closed', index }));
  },
  /** Whether the caller was still on the line (not failed): then the call's `completed` callback follows. */
  async hangUp({ index }) {
    const line = lines.get(index);
    if (!line) return false;
    await line.hangUp();
    return line.connected && !results.failures.has(index);
  },
  async stop({ index }) {
    await lines.get(index)?.stop();
  },
  measure: ({ on }) => window.measure(on),
  collect() {
    const silent = [...lines.values()].filter((line) => line.connected && line.heardNothing).map((line) => line.index);
    return { results, silent, loopP99: window.loopP99(), priority, shift: performance.timeOrigin - mainOrigin };
  },
};

parentPort.on('message', async ({ id, type, ...request }) => {
  try {
    parentPort.postMessage({ id, value: await handlers[type](request) });
  } catch (error) {
    parentPort.postMessage({ id, error: error.stack ?? String(error) });
  }
});
