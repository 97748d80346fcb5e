#!/usr/bin/env node
// Browser calls' capacity as users meet it: the WHOLE platform, running as real processes, with N browsers talking
// to an agent over the media worker's realtime socket (libs/contracts/src/realtime.ts) at once.
//
//   npx nx run standalone:build            (distributed: npx nx run-many -t build -p gateway agents calls media-worker webhook-dispatcher)
//   npm run bench:browser                  # standalone, N = 10, 50, 100; 120 s measured after 10 s warm-up
//   npm run bench:browser -- --calls 10,50 --seconds 30 --warmup 5 --pin
// The flags are bench:media's (bench/media.mjs): --mode standalone|distributed, --calls, --seconds, --warmup,
// --ramp (default 5 s), --llm-ms, --tts-ms, --voice openai|local, --vad silero|energy, --pin, --dist, --explain,
// --caller-threads (the browsers' sockets spread over threads of their own, as bench:media's carrier streams: one per
// 25 calls by default; 1 puts them in one loop);
// and its diagnostics (BENCH_LOG_LEVEL, BENCH_LOG_FILE, BENCH_NODE_OPTIONS). The processes are bench:media's too
// (the platform on a fresh database, the vendor fakes in a process of their own, this load generator) but no
// carrier: the browsers are the callers. What each call does and how every figure is taken is bench:media's
// (bench/media/caller.mjs and bench/media/load.mjs are shared); what differs is the line
// (bench/media/browser-call.mjs).
//
// Each call: POST /v1/realtime/tokens {agent_id} (as the customer's server mints a token for its page), ramped over
// --ramp seconds; the browser opens the token's `url`, sends `start`, and on `call-start` streams its microphone —
// transport: inline PCM16 LE 16 kHz mono over the realtime WebSocket, 20 ms frames numbered by `seq`, one every
// 20 ms. It plays the agent's frames in real time (marks echoed once played, `clear` drops the rest), hears the
// greeting, asks when the agent is quiet, talks over every third answer, and at the end sends {"type":"hangup"}:
// the call must end `call-end` completed, the socket close 1000, and GET /v1/calls/{id} read ended/completed.
//
// Printed per N, over the --seconds after ramp-up and --warmup (definitions as bench:media's):
//   pacing   |Δ − 20 ms| between consecutive agent frames of one turn as they arrive at the browser, the turn's
//            first two gaps excluded (the engine's 40 ms lead): p50/p99/max;
//   connect  token request sent → the first agent frame with energy received (the greeting): p50/p95 over every
//            call (calls connect during the ramp-up, each beside those already talking), and split: token minted
//            (the POST's 201), socket `call-start` (from the 201: the socket opened, `start` sent, the token checked,
//            the call joined), first audio (from `call-start`: the greeting, a fixed line the worker synthesizes
//            once and then plays from its cache, so the voice's --tts-ms is in the first call's figure only);
//   v2v, clear, stale, audio process (CPU %, peak RSS, calls per core), failed, loadgen: as bench:media's.
// Verdicts: pacing p99 ≤ 5 ms (every frame 20 ± 5 ms after the last), the calls per core of the audio process at
// that pacing, 0 failed calls, 0 stale frames.
import { BrowserCall, browserSounds, newConnectTimes, TRANSPORT } from './media/browser-call.mjs';
import { callerThreadsFor, CallerThreads } from './media/caller-threads.mjs';
import { newResults } from './media/caller.mjs';
import { benchMain, benchOptions, describeRun, figures, fmt, PACING_TARGET_MS, pct, printFindings, runCalls } from './media/load.mjs';
import { ENDPOINTING_MS } from './media/vendor-fakes.mjs';

const o = benchOptions('10,50,100');

async function run(n, vendors, libs) {
  const results = { ...newResults({ explain: o.explain }), connect: newConnectTimes() };
  const threads = new CallerThreads(o.callerThreads ?? callerThreadsFor(n), { kind: 'browser', dist: o.dist, sounds: browserSounds(libs), voice: o.voice, llmMs: o.modelMs, ttsMs: o.voiceMs, explain: o.explain });
  try {
    return await runCalls(o, {
      n,
      vendors,
      results,
      env: {},
      newCall: (call) => new BrowserCall({ ...call, line: threads.line(call.index) }),
      callers: threads,
    });
  } finally {
    await threads.stop();
  }
}

const p50p95 = (xs) => `${Math.round(pct(xs, 50))} / ${Math.round(pct(xs, 95))}`;

function report(r) {
  const { results: x, n } = r;
  const { failed, perCore, pacing } = figures(r);
  const c = x.connect;
  console.log(
    `${String(n).padStart(5)} ${String(r.live).padStart(4)} | ${fmt(pacing.p50)} ${fmt(pacing.p99)} ${fmt(pacing.max)} ${String(x.pacing.length).padStart(8)} | ${fmt(pct(c.total, 50))} ${fmt(pct(c.total, 95))} | ${fmt(pct(x.voiceToVoice, 50))} ${fmt(pct(x.voiceToVoice, 95))} ${String(x.turns).padStart(6)} | ${fmt(pct(x.clear, 95))} ${String(x.clear.length).padStart(5)} | ${String(x.stale).padStart(5)} | ${fmt(r.cpu)} ${fmt(r.peakRss, 7)} ${fmt(perCore, 8)} | ${String(failed).padStart(6)} | ${fmt(r.loopP99)}`,
  );
  console.log(`        transport: ${TRANSPORT}; connect p50 / p95 ms over ${c.total.length} calls: token minted ${p50p95(c.mint)}, then socket call-start ${p50p95(c.join)}, then first audio ${p50p95(c.greeting)}`);
  return { pacingOk: printFindings(o, r), perCore, cpu: r.cpu };
}

let sustained;
await benchMain(o, {
  header: () => [
    `browser bench, ${describeRun(o)}; transport: ${TRANSPORT}`,
    `v2v is net of ${ENDPOINTING_MS} + ${o.modelMs} + ${o.voiceMs} ms (endpointing + model + voice); connect is not net of anything (the greeting is cached after a worker's first call: no voice delay in it)`,
    'calls live | pacing |Δ−20| ms p50   p99    max   frames | connect ms p50  p95 | v2v net ms p50  p95  turns | clear p95 (n) | stale | audio cpu %  rss MB calls/core | failed | loadgen loop p99 ms',
  ],
  perN: async (n, vendors, libs) => {
    const { pacingOk, perCore, cpu } = report(await run(n, vendors, libs));
    if (pacingOk && n > (sustained?.n ?? 0)) sustained = { n, perCore, cpu };
  },
  summary: () =>
    sustained
      ? `browser calls sustained (${TRANSPORT}; largest N with pacing p99 ≤ ${PACING_TARGET_MS} ms at the browser): ${sustained.n}, the audio process at ${Math.round(sustained.cpu)} % of a core: ${Math.round(sustained.perCore)} calls per core`
      : `browser calls sustained (${TRANSPORT}; pacing p99 ≤ ${PACING_TARGET_MS} ms at the browser): < ${o.calls[0]}`,
});
