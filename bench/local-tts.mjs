#!/usr/bin/env node
// The offline voice (`local`, mespeak/eSpeak compiled to JavaScript, synthesized in a pool of worker threads).
// 1. Speed of one sentence at a time, once warm: how much faster than real time it is spoken. A sentence is
//    synthesized whole before its first chunk, so this factor is what keeps the agent's first words prompt.
// 2. The pool's throughput with its queue kept full (workers recycled every 40 lines, as in production):
//    sentences/s, seconds of speech per second, each line's real-time factor (its audio over the time from
//    request to audio, queue wait included), and how many calls that carries at real time, assuming an agent
//    speaks half the time (0.5 s of speech per call per second) and the workers are busy 100 % of the time.
//
//   npx nx run media-worker:build
//   npm run bench:local-tts -- [--sentences 30] [--lines 400] [--workers 1]   (--workers default: LOCAL_TTS_WORKERS or 1)
// Target: ≥ 5× real time per sentence (p90 of the sentences), on one core.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const require = createRequire(import.meta.url);
const SPEECH = join(import.meta.dirname, '..', 'dist', 'apps', 'media-worker', 'libs', 'providers', 'speech', 'src', 'index.js');
if (!existsSync(SPEECH)) {
  console.error('Build the media worker first: npx nx run media-worker:build');
  process.exit(1);
}
const { LocalTextToSpeech } = require(SPEECH);

const args = process.argv.slice(2);
const option = (name, fallback) => Number(args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const sentences = option('--sentences', 30);
const lines = option('--lines', 400);
const workers = option('--workers', process.env.LOCAL_TTS_WORKERS || 1);
const SENTENCES = [
  'Your table for four is booked for eight tonight.',
  'Hello, how can I help you today?',
  'I can move your appointment to Thursday at half past two, or Friday morning if that suits you better.',
  'Thanks for calling, goodbye.',
];
const SPEECH_SHARE = 0.5; // an agent speaks about half of a call
const SAMPLE_RATE = 22050;

const tts = new LocalTextToSpeech({ workers });
await tts.warmUp(['en-US']);

/** Seconds of audio for `text`, and the seconds from request to the last chunk. */
async function speak(text) {
  const started = performance.now();
  let samples = 0;
  for await (const chunk of tts.synthesize({ text, language: 'en-US', signal: new AbortController().signal })) samples += chunk.pcm.length;
  return { audio: samples / SAMPLE_RATE, elapsed: (performance.now() - started) / 1000 };
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

// 1. One sentence at a time.
const factors = [];
for (let i = 0; i < sentences; i++) {
  const { audio, elapsed } = await speak(SENTENCES[i % SENTENCES.length]);
  factors.push(audio / elapsed);
}
factors.sort((a, b) => a - b);
// The slowest 10 % bound the delay a caller hears, so the target is judged on the 10th percentile of the factor.
const p10 = quantile(factors, 0.1);
console.log(`one at a time: ${sentences} sentences (Node ${process.version}), speed over real time: median ${quantile(factors, 0.5).toFixed(0)}x, p90 (slow end) ${p10.toFixed(0)}x, slowest ${factors[0].toFixed(0)}x`);
console.log(`target >= 5x real time at p90: ${p10 >= 5 ? 'meets' : 'MISSES'}`);

// 2. The pool, saturated: twice as many lines in flight as workers, so none ever waits for work.
const before = { ...tts.stats };
const pooled = [];
let next = 0;
const started = performance.now();
await Promise.all(
  Array.from({ length: 2 * workers }, async () => {
    for (let i = next++; i < lines; i = next++) pooled.push(await speak(SENTENCES[i % SENTENCES.length]));
  }),
);
const wall = (performance.now() - started) / 1000;
const speechPerSecond = pooled.reduce((sum, line) => sum + line.audio, 0) / wall;
const lineFactors = pooled.map((line) => line.audio / line.elapsed).sort((a, b) => a - b);
console.log(
  `pool of ${workers} worker(s), ${lines} lines: ${(lines / wall).toFixed(1)} sentences/s, ${speechPerSecond.toFixed(1)} s of speech per s; ` +
    `per line (queue wait included) median ${quantile(lineFactors, 0.5).toFixed(1)}x, p90 (slow end) ${quantile(lineFactors, 0.1).toFixed(1)}x real time; ` +
    `workers recycled ${tts.stats.recycled - before.recycled}, failed ${tts.stats.failed - before.failed}`,
);
console.log(`carries about ${Math.floor(speechPerSecond / SPEECH_SHARE)} concurrent calls at real time (agents speaking ${SPEECH_SHARE * 100} % of the time, workers always busy)`);
await tts.close();
