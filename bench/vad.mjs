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
//
// --paced: N phone calls in real time instead, as the worker meets them: each call's frame every 20 ms (each call at
// its own phase), handed over every 4 ms as the stream thread does, the model batching on its own cadence (the
// worker's, then one batch per hand-over, the cadence before batches waited), alternated; prints CPU per window,
// the mean batch and the CPU share per call. The harness's own timers are in both.
//   npx node bench/vad.mjs --paced --calls 50,200 --seconds 10
import { loadLibs } from './media/build.mjs';
import { join, resolve } from 'node:path';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []));
const CALLS = String(args.calls ?? '1,4,16,64').split(',').map(Number);
const SECONDS = Number(args.seconds ?? 3);
const DIST = resolve(args.dist ?? join(import.meta.dirname, '..', 'dist'));
const { engine } = loadLibs(DIST);

const log = { error: (message, fields) => console.error(message, fields), warn: (message, fields) => console.error(message, fields) };
const session = await engine.openSileroSession();

if (process.argv.includes('--paced')) await paced();
else await rounds();

async function paced() {
  const cadences = { worker: undefined, 'per hand-over': { batchSize: 1, maxWaitMs: 0 } };
  console.log(`Silero VAD v5, one thread; N phone calls in real time, ${SECONDS} s each, frames handed over every 4 ms`);
  console.log('calls | cadence       | µs/window | mean batch | share of a core per call');
  for (const n of CALLS) {
    for (let round = 0; round < 2; round++) {
      for (const [name, cadence] of Object.entries(cadences)) {
        const batches = [];
        const counting = { run: (feeds) => (batches.push(feeds.input.dims[0]), session.run(feeds)) };
        const model = new engine.SileroModel(counting, log, cadence);
        await model.ready();
        const vads = Array.from({ length: n }, () => model.vad(8000));
        const phase = vads.map(() => Math.random() * 20);
        const frame = Int16Array.from({ length: 160 }, () => Math.round(3000 * (Math.random() * 2 - 1)));
        const start = performance.now();
        const sent = vads.map(() => 0);
        const handOver = () => {
          const now = performance.now() - start;
          vads.forEach((vad, i) => {
            while (phase[i] + sent[i] * 20 <= now) {
              vad.push(frame, 20);
              sent[i]++;
            }
          });
        };
        // A second of warm-up, then the measured seconds.
        const timer = setInterval(handOver, 4);
        await new Promise((resolve) => setTimeout(resolve, 1000));
        batches.length = 0;
        const from = process.cpuUsage();
        await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
        const used = process.cpuUsage(from);
        clearInterval(timer);
        await model.settled();
        const windows = batches.reduce((a, b) => a + b, 0);
        const perWindow = (used.user + used.system) / windows;
        const share = (used.user + used.system) / 1e4 / SECONDS / n;
        console.log(`${String(n).padStart(5)} | ${name.padEnd(13)} | ${perWindow.toFixed(1).padStart(9)} | ${(windows / batches.length).toFixed(1).padStart(10)} | ${share.toFixed(3).padStart(6)} %`);
      }
    }
  }
}

async function rounds() {
  const model = new engine.SileroModel(session, log);
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
}
