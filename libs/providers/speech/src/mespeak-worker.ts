// A mespeak worker thread (see mespeak-threads.ts). mespeak is loaded into this thread's realm, never the main
// thread's: it blocks 30-100 ms per sentence and breaks on about its 80th in one realm. Node runs this file as
// it is: compiled JavaScript under dist/, or this TypeScript under jest (Node strips the types). So it loads only
// node: modules, with require (type-only imports vanish, and the rest stays CommonJS either way), and finds
// mespeak by the paths the parent resolved.
import type { MespeakLine, MespeakWorkerData } from './mespeak-line';
import type { WorkerReply, WorkerRequest } from './speech-worker-pool';

const { readFileSync } = require('node:fs') as typeof import('node:fs');
const { createRequire } = require('node:module') as typeof import('node:module');
const { join } = require('node:path') as typeof import('node:path');
const { parentPort, workerData } = require('node:worker_threads') as typeof import('node:worker_threads');

/** What this worker answers. (mespeak-threads.ts imports it, which also makes tsc compile this file into dist/.) */
export type MespeakReply = WorkerReply<ArrayBuffer>;

interface MeSpeak {
  loadConfig(data: unknown): void;
  loadVoice(data: unknown): void;
  speak(text: string, args: Record<string, unknown>): ArrayBuffer | null;
}

if (!parentPort) throw new Error('mespeak-worker runs in a worker thread only');
const port = parentPort;
const data = workerData as MespeakWorkerData;
const loadedVoices = new Set<string>();
const meSpeak = loadEngine();

function loadEngine(): MeSpeak {
  // It announces on load that it cannot play audio without a browser (we only want the WAV): keep logs clean.
  const warn = console.warn;
  console.warn = () => undefined;
  try {
    const engine = createRequire(data.main)(data.main) as MeSpeak;
    engine.loadConfig(readJson(data.config));
    return engine;
  } finally {
    console.warn = warn;
  }
}

function loadVoice(voice: string): void {
  if (loadedVoices.has(voice)) return;
  meSpeak.loadVoice(readJson(join(data.voices, `${voice}.json`)));
  loadedVoices.add(voice);
}

function speak(line: MespeakLine): ArrayBuffer {
  loadVoice(line.voice);
  const wav = meSpeak.speak(line.text, {
    rawdata: 'arraybuffer',
    voice: line.voice,
    ...(line.variant ? { variant: line.variant } : {}),
    speed: line.wordsPerMinute,
    pitch: line.pitch,
  });
  if (!wav) throw new Error(`mespeak produced no audio for voice ${line.voice}`);
  return wav;
}

function readJson(file: string): unknown {
  return JSON.parse(readFileSync(file, 'utf8'));
}

function reply(message: MespeakReply, transfer: ArrayBuffer[] = []): void {
  if (!data.sync) return port.postMessage(message, transfer);
  data.sync.port.postMessage(message, transfer);
  Atomics.add(data.sync.posted, 0, 1);
  Atomics.notify(data.sync.posted, 0);
}

// Voices loaded and the engine's code compiled now, so the first real line is fast: one line spoken, since each
// counts towards the library's limit.
for (const voice of data.preload) loadVoice(voice);
if (data.preload[0]) speak({ text: 'Ready.', voice: data.preload[0], wordsPerMinute: 175, pitch: 50 });
reply({ ready: true });
port.on('message', ({ id, job }: WorkerRequest<MespeakLine>) => {
  try {
    const wav = speak(job);
    reply({ id, result: wav }, [wav]);
  } catch (error) {
    reply({ id, error: error instanceof Error ? error.message : String(error) });
  }
});
