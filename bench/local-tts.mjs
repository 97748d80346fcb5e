#!/usr/bin/env node
// The offline voice (`local`, mespeak/eSpeak compiled to JavaScript): how much faster than real time it speaks
// a sentence once warm. It synthesizes a whole sentence before the first chunk, so this factor is what keeps the
// agent's first words prompt on a busy worker.
//
//   npx nx run media-worker:build
//   node bench/local-tts.mjs [--sentences 30]
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
const count = Number(args[args.indexOf('--sentences') + 1] || 30);
const SENTENCES = [
  'Your table for four is booked for eight tonight.',
  'Hello, how can I help you today?',
  'I can move your appointment to Thursday at half past two, or Friday morning if that suits you better.',
  'Thanks for calling, goodbye.',
];

const tts = new LocalTextToSpeech();
tts.warmUp(['en-US']);
const factors = [];
for (let i = 0; i < count; i++) {
  const text = SENTENCES[i % SENTENCES.length];
  const started = performance.now();
  let samples = 0;
  for await (const chunk of tts.synthesize({ text, language: 'en-US', signal: new AbortController().signal })) samples += chunk.pcm.length;
  const elapsedMs = performance.now() - started;
  factors.push(samples / 22.05 / elapsedMs);
}
factors.sort((a, b) => a - b);
const at = (q) => factors[Math.min(factors.length - 1, Math.floor(q * factors.length))];
// The slowest 10 % bound the delay a caller hears, so the target is judged on the 10th percentile of the factor.
const p10 = at(0.1);
console.log(`${count} sentences (Node ${process.version}), speed over real time: median ${at(0.5).toFixed(0)}x, p90 (slow end) ${p10.toFixed(0)}x, slowest ${factors[0].toFixed(0)}x`);
console.log(`target >= 5x real time at p90: ${p10 >= 5 ? 'meets' : 'MISSES'}`);
