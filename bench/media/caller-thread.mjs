// One caller thread (caller-threads.mjs): the lines of its shard of calls (`kind` phone: PhoneLine, a Twilio media
// stream; browser: BrowserLine, the realtime socket), each talking and listening in real time, and the figures they add to while the window is measured. Requests from the main thread
// carry an `id` and are answered with it; a stream the platform closes is reported unasked ({ type: 'closed' }).
import { getPriority, setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { agentSpeech } from './agent-speech.mjs';
import { BROWSER_RATE, BrowserLine, newConnectTimes } from './browser-call.mjs';
import { loadLibs } from './build.mjs';
import { measuredWindow, newResults } from './caller.mjs';
import { PHONE_RATE, PhoneLine } from './phone-call.mjs';
import { ANSWERS, GREETING } from './vendor-fakes.mjs';

const { kind, dist, voice, llmMs, ttsMs, explain, mainOrigin } = workerData;
// A phone line's μ-law buffers arrive as plain Uint8Arrays (its stream encodes them with Buffer's base64); a browser's
// frames are base64 strings already.
const asFrames = (frames) => frames.map((f) => (typeof f === 'string' ? f : Buffer.from(f.buffer, f.byteOffset, f.byteLength)));
const sounds = { speech: asFrames(workerData.sounds.speech), noise: asFrames(workerData.sounds.noise) };
/**
 * The carrier's side (or the browser) runs on machines of its own, not beside the platform: here its readings would
 * otherwise wait behind the platform's processes on the shared cores. So each caller thread asks the scheduler for the priority the
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
const speechOf = agentSpeech({ libs, voice, greeting: GREETING, answers: ANSWERS, rate: kind === 'browser' ? BROWSER_RATE : PHONE_RATE });
const connect = (init) => libs.twilio.FakeMediaStream.connect(init);
const newLine = (caller) => (kind === 'browser' ? new BrowserLine(caller) : new PhoneLine({ ...caller, connect, audio: libs.audio }));
const results = kind === 'browser' ? { ...newResults({ explain }), connect: newConnectTimes() } : newResults({ explain });
const lines = new Map();
const window = measuredWindow(results);

const handlers = {
  async open({ index, callId, init }) {
    const line = newLine({ index, results, llmMs, ttsMs, sounds, speechOf });
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
