#!/usr/bin/env node
// DIAGNOSTIC: the Silero VAD's CPU per window (32 ms of audio, at 8 or 16 kHz), through the worker's own code
// (libs/media/voice-engine, silero-vad.ts: buffering, batching, state), for several numbers of calls whose windows
// are ready together (the batch size). Each of N calls gets a 20 ms frame of noise per round; every call's frame of
// a round is pushed before the model runs, as the stream thread hands frames over. CPU is this process's user +
// system time over the rounds, divided by the windows run.
//
//   npx nx run media-worker:build      (or standalone:build)
//   npm run bench:vad                   # N = 1, 4, 16, 64 at 8 and 16 kHz, 3 s of audio each
//   npx node bench/vad.mjs --calls 1,16 --seconds 10
import { loadLibs } from './media/build.mjs';
import { join, resolve } from 'node:path';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []));
const CALLS = String(args.calls ?? '1,4,16,64').split(',').map(Number);
const SECONDS = Number(args.seconds ?? 3);
const DIST = resolve(args.dist ?? join(import.meta.dirname, '..', 'dist'));
const { engine } = loadLibs(DIST);

const log = { error: (message, fields) => console.error(message, fields), warn: (message, fields) => console.error(message, fields) };
const model = new engine.SileroModel(engine.openSileroSession(), log);
await model.ready();
if (!model.usable) process.exit(1);

console.log(`Silero VAD v5, one thread; ${SECONDS} s of audio per call; CPU µs per window (32 ms of audio)`);
console.log('rate    calls | µs/window | share of a core per call');
for (const rate of [8000, 16000]) {
  for (const n of CALLS) {
    const vads = Array.from({ length: n }, () => model.vad(rate));
    const frame = Int16Array.from({ length: rate / 50 }, () => Math.round(3000 * (Math.random() * 2 - 1)));
    const rounds = SECONDS * 50;
    // A second of warm-up: the first runs of a batch shape allocate.
    for (let r = 0; r < 50; r++) {
      for (const vad of vads) vad.push(frame, 20);
      await model.settled();
    }
    const from = process.cpuUsage();
    for (let r = 0; r < rounds; r++) {
      for (const vad of vads) vad.push(frame, 20);
      await model.settled();
    }
    const used = process.cpuUsage(from);
    const windows = n * Math.floor((rounds * (rate / 50)) / (rate === 8000 ? 256 : 512));
    const perWindow = (used.user + used.system) / windows;
    // A window is 32 ms of audio: 31.25 windows per second of a call.
    console.log(`${String(rate).padEnd(6)} ${String(n).padStart(6)} | ${perWindow.toFixed(1).padStart(9)} | ${((perWindow * 31.25) / 1e4).toFixed(2).padStart(6)} %`);
  }
}
