#!/usr/bin/env node
// The media plane's capacity as users meet it: the WHOLE platform, running as real processes, driven as a carrier
// drives it, over real sockets.
//
//   npx nx run standalone:build            (distributed: npx nx run-many -t build -p gateway agents calls media-worker webhook-dispatcher)
//   npm run bench:media                    # standalone, N = 10, 50, 100, 200; 120 s measured after 10 s warm-up
//   npm run bench:media -- --mode distributed --calls 10,50 --seconds 30 --warmup 5 --llm-ms 150 --tts-ms 100
//   npm run bench:media -- --voice local    # the offline voice: the calls its synthesis carries at real time
// Other flags: --ramp <s> (default 5) over which the calls are placed; --dist <dir> (default dist) the build to run;
// --vad silero|energy (default silero, the platform's own default) the media worker's VAD. The caller's "speech" is a
// tone, which Silero rightly does not take for a voice: with silero the figures carry its cost (the same for every
// window, whatever the audio), not its decisions.
// --pin (Linux, 2+ cores, taskset): the process carrying the audio gets the last core to itself, and this load
// generator, the vendor fakes and the rest of the platform (which inherit this process's affinity) share the others —
// as a deployment gives media workers dedicated cores (Kubernetes' static CPU manager). Its calls per core then count
// one core that nothing else competes for; without --pin every process shares every core. In distributed mode the
// machine's PostgreSQL and NATS are not pinned.
// Diagnostics: --explain prints each stale frame (call id, time, part, time since the clear, the caller's state) with
// the line's last 6 s; BENCH_LOG_LEVEL sets the platform's LOG_LEVEL (default warn; info logs each barge-in by call
// id); BENCH_LOG_FILE appends the platform's output to that file; BENCH_NODE_OPTIONS becomes its NODE_OPTIONS (e.g.
// "--cpu-prof --cpu-prof-dir=/tmp/prof" profiles every platform process, the media worker's included).
//
// Processes: the platform (standalone: one command; distributed: the five services, on this machine's PostgreSQL
// and NATS with a NATS_NAMESPACE of its own), fresh database per run (DATABASE_URL, else embedded in standalone);
// the vendor fakes in a process of their own (Deepgram live WebSocket, an OpenAI-compatible model, the `openai`
// synthesizer: bench/media/vendor-fakes.mjs); and this one, the load generator: the fake Twilio REST server, which
// opens each call's Media Streams WebSocket (μ-law, base64 JSON, marks, clear), and one simulated caller per call
// (bench/media/caller.mjs). Each N gets a fresh platform.
//
// Each call is placed with POST /v1/calls (an agent created through the API, key seeded with BOOTSTRAP_KEYS),
// answered by the fake Twilio (ringing, in-progress, then the stream), ramped over --ramp seconds. Every caller
// sends a 20 ms frame every 20 ms; hears the greeting; asks (800 ms of speech) when the agent is quiet; hears the
// answer (the fake model's two answers in turn, so consecutive answers sound different); talks over every third
// answer (700 ms, six words, 0.5-1.5 s into it); at the end hangs up (Twilio's `completed`) and the call must be
// recorded ended/completed.
//
// Printed per N, over the --seconds after ramp-up and --warmup:
//   pacing   |Δ − 20 ms| between consecutive agent frames of one turn as they arrive at the carrier, the turn's
//            first two gaps excluded (the engine sends a 40 ms lead at once by design): p50/p99/max. Turns are told
//            apart by ear: the fake voice speaks each sentence as its own tone (bench/media/agent-speech.mjs); with
//            --voice local (words, no tones), by a gap over 100 ms only: then a stall over 100 ms starts a "new
//            turn" and is not counted, and a pause over 400 ms inside an answer makes the caller ask early and take
//            the rest of that answer for the next one (v2v too low, even negative). Read --voice local's pacing
//            and v2v as lower bounds; its frames, unanswered turns and failures are exact;
//   v2v      voice-to-voice: the caller's last speech frame sent → the answer's first frame received, MINUS the
//            fakes' fixed delays: the recognizer's endpointing (300 ms of silence after the speech), the model's
//            first token (--llm-ms) and the voice's first audio (--tts-ms; 0 with --voice local, whose synthesis is
//            the platform's own). What remains is the platform's: p50/p95;
//   clear    barge-in: the moment the recognizer can have the words (last speech frame + endpointing) → `clear`
//            received: p95;
//   stale    agent frames of the interrupted answer received after its `clear`, told by ear: a frame with the tone
//            of a sentence of the turn that was playing when the clear came, until the caller next asks (the answer
//            to the barge-in's words is the other answer; the one after the next question sounds like the cut one).
//            Not by timing, as it was ("any frame sooner than --llm-ms + --tts-ms after the clear"): the engine
//            starts the next answer at the clear (the fake recognizer sends the barge-in's interim result, which
//            cuts the answer, and its final, which starts the next, back to back), so that answer's first frames
//            (its 40 ms lead, sent at once) leave the platform just over the fakes' 250 ms after the clear; this
//            process, its event loop busy with 50 callers, read the clear a few ms late relative to them, so they
//            looked sooner and were counted stale. Seen with --explain: the 4 stale frames of a 50-call run were two
//            calls' next-answer leads, 244 and 248 ms after the clear as read here, 258 ms after the engine's
//            barge-in log. With --voice local (no tones) that timing rule is all there is, with the model's delay
//            alone: approximate;
//   live     calls with an open media stream when the measurement began (N minus those refused or failed);
//   audio process  CPU % (of one core) and peak RSS of the process listening on MEDIA_PORT, and calls per core
//            (live calls / its cores busy);
//   failed   calls that did not end normally: a POST /v1/calls not 201 (5xx included), a status callback refused,
//            a refused media stream, a stream the platform closed, a call not recorded ended/completed, or one
//            whose agent never spoke;
//   loadgen  this process's own event-loop delay p99: if high, the figures carry the load generator's lateness.
// Targets (verdicts printed): pacing p99 ≤ 5 ms at ≥ 200 calls per core of the audio process, 0 failed calls,
// 0 stale frames. bench/engine.mjs (npm run bench:engine) is the engine alone, in-process: a diagnostic.
import { execFileSync, spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { loadLibs, missingBuilds } from './media/build.mjs';
import { callerSounds, newResults, SimulatedCall } from './media/caller.mjs';
import { BENCH_KEY, startPlatform } from './media/platform.mjs';
import { commandOf, pidListeningOn, usageOf } from './media/process-usage.mjs';
import { agentSpeech } from './media/agent-speech.mjs';
import { ANSWERS, ENDPOINTING_MS, GREETING } from './media/vendor-fakes.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []));
const MODE = args.mode ?? 'standalone';
const CALLS = String(args.calls ?? '10,50,100,200').split(',').map(Number);
const SECONDS = Number(args.seconds ?? 120);
const WARMUP = Number(args.warmup ?? 10);
const RAMP = Number(args.ramp ?? 5);
const LLM_MS = Number(args['llm-ms'] ?? 150);
const TTS_MS = Number(args['tts-ms'] ?? 100);
// The agent's voice: the `openai` synthesizer against its fake (first audio after --tts-ms), or `local`, the offline
// voice synthesizing in the platform itself (its time is the platform's own, so nothing is subtracted for it).
const VOICE = args.voice ?? 'openai';
const VAD = args.vad ?? 'silero';
const EXPLAIN = 'explain' in args;
const VOICE_MS = VOICE === 'local' ? 0 : TTS_MS;
const PIN = 'pin' in args;
const AUDIO_CORE = cpus().length - 1;
/** Every thread of `pid` onto `cores` (a taskset list such as "0" or "0-2"). */
const pin = (pid, cores) => execFileSync('taskset', ['-a', '-p', '-c', cores, String(pid)], { stdio: 'ignore' });
const DIST = resolve(args.dist ?? join(import.meta.dirname, '..', 'dist'));
const PACING_TARGET_MS = 5;
const SETTLE_MS = 3000;
const CALLS_PER_CORE_TARGET = 200;

if (!['standalone', 'distributed'].includes(MODE) || !['openai', 'local'].includes(VOICE) || !['silero', 'energy'].includes(VAD)) {
  console.error('--mode is standalone or distributed; --voice is openai or local; --vad is silero or energy');
  process.exit(2);
}
const missing = missingBuilds(DIST, MODE);
if (missing.length) {
  console.error(`Build the platform first:\n  ${missing.join('\n  ')}`);
  process.exit(1);
}

const pct = (xs, p) => {
  if (!xs.length) return NaN;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const fmt = (x, width = 6) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a').padStart(width);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The vendor fakes' process; resolves to their URLs and keys. */
async function startVendors() {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'media', 'vendor-fakes.mjs'), '--dist', DIST, '--llm-ms', String(LLM_MS), '--tts-ms', String(TTS_MS)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the vendor fakes exited (${code})`)));
  });
  return { child, ...JSON.parse(line) };
}

async function run(n, vendors, libs) {
  const twilio = new libs.twilio.FakeTwilioServer();
  const twilioUrl = await twilio.start();
  const platform = await startPlatform({
    mode: MODE,
    dist: DIST,
    calls: n,
    env: {
      STT_PROVIDERS: 'deepgram',
      TTS_PROVIDERS: VOICE,
      VAD,
      DEEPGRAM_API_KEY: vendors.keys.deepgram,
      DEEPGRAM_BASE_URL: vendors.deepgramUrl,
      LLM_BASE_URL: vendors.llmUrl,
      LLM_API_KEY: vendors.keys.openai,
      LLM_MODEL: 'fake-model',
      POST_CALL_MODEL: 'fake-model',
      OPENAI_SPEECH_BASE_URL: vendors.speechUrl,
      OPENAI_SPEECH_API_KEY: vendors.keys.openai,
      TWILIO_ACCOUNT_SID: twilio.accountSid,
      TWILIO_AUTH_TOKEN: twilio.authToken,
      TWILIO_API_BASE_URL: twilioUrl,
      TWILIO_FROM_NUMBER: '+15550009999',
    },
  });
  const results = newResults({ explain: EXPLAIN });
  const api = async (method, path, body) => {
    try {
      const res = await fetch(`${platform.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${BENCH_KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    } catch (error) {
      return { status: 0, body: { code: error.cause?.code ?? error.message } };
    }
  };
  try {
    const agent = await api('POST', '/v1/agents', {
      name: 'Bench front desk',
      mode: 'conversation',
      languages: [{ code: 'en-US', stt_provider: 'deepgram', tts_provider: VOICE, greeting: GREETING, system_prompt: 'Be brief.' }],
      conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
    });
    if (agent.status !== 201) throw new Error(`could not create the agent: ${agent.status} ${JSON.stringify(agent.body)}`);
    const audioPid = pidListeningOn(platform.mediaPort);
    if (!audioPid) throw new Error(`no process listens on MEDIA_PORT ${platform.mediaPort}`);
    const audioCommand = commandOf(audioPid);
    if (PIN) pin(audioPid, String(AUDIO_CORE));

    // A deployment is not dialled into at its first breath: its start-up work (and the load reports call admission
    // takes from it) settles first.
    await sleep(SETTLE_MS);
    const sounds = callerSounds(libs.audio);
    const speechOf = agentSpeech({ libs, voice: VOICE, greeting: GREETING, answers: ANSWERS });
    const calls = Array.from({ length: n }, (_, index) => new SimulatedCall({ index, twilio, api, agentId: agent.body.id, sounds, speechOf, results, llmMs: LLM_MS, ttsMs: VOICE_MS }));
    const started = Promise.all(calls.map((call, i) => sleep((i * RAMP * 1000) / n).then(() => call.start().catch((error) => call.fail(`could not start: ${error.message}`)))));
    await sleep((RAMP + WARMUP) * 1000);
    await started;

    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    results.measuring = true;
    // Calls per core counts the calls actually carried: a refused or failed call costs the audio process nothing.
    const live = calls.filter((call) => call.stream?.open).length;
    const sentBefore = await sentPacing(platform.mediaMetricsUrl);
    const from = { ...usageOf(audioPid), at: performance.now() };
    let peakRss = from.rssMb;
    const sampler = setInterval(() => {
      try {
        peakRss = Math.max(peakRss, usageOf(audioPid).rssMb);
      } catch {
        // the process is gone: reported below
      }
    }, 1000);
    await sleep(SECONDS * 1000);
    results.measuring = false;
    const sentAfter = await sentPacing(platform.mediaMetricsUrl);
    clearInterval(sampler);
    loop.disable();
    let cpu = NaN;
    try {
      const to = usageOf(audioPid);
      cpu = ((to.cpuSeconds - from.cpuSeconds) / ((performance.now() - from.at) / 1000)) * 100;
      peakRss = Math.max(peakRss, to.rssMb);
    } catch {
      // the audio process died during the run
    }

    // Hang-ups are spread over a second, as people do, then every call must be recorded as ended by the caller.
    await Promise.all(calls.map((call, i) => sleep((i * 1000) / n).then(() => call.hangUp())));
    await sleep(3000);
    const refusals = await refusalsByReason(platform.callsMetricsUrl);
    for (let i = 0; i < calls.length; i += 20) await Promise.all(calls.slice(i, i + 20).map((call) => call.verifyEnded()));
    for (const died of platform.exited) results.failures.set(`process:${died}`, died);
    const sentP99 = bucketPercentile(sentBefore, sentAfter, 0.99);
    return { n, live, results, cpu, peakRss, audioPid, audioCommand, refusals, loopP99: loop.percentile(99) / 1e6, sentP99, crashed: platform.exited };
  } finally {
    await platform.stop();
    await twilio.stop();
  }
}

/** The media worker's parley_media_playout_jitter_seconds buckets (cumulative counts by upper bound, ms). */
async function sentPacing(metricsUrl) {
  const text = await fetch(metricsUrl)
    .then((res) => res.text())
    .catch(() => '');
  return [...text.matchAll(/^parley_media_playout_jitter_seconds_bucket\{le="([^"]+)"\} (\d+)/gm)].map(([, le, count]) => ({ le: le === '+Inf' ? Infinity : Number(le) * 1000, count: Number(count) }));
}

/** The bucket bound (ms) under which `q` of the window's observations fall: an upper bound of that percentile. */
function bucketPercentile(before, after, q) {
  const counts = after.map((b, i) => ({ le: b.le, count: b.count - (before[i]?.count ?? 0) }));
  const total = counts.at(-1)?.count ?? 0;
  return total ? counts.find((b) => b.count >= q * total).le : NaN;
}

/** Calls admission refused before dialling, by reason (the calls service's parley_call_admissions_total). */
async function refusalsByReason(metricsUrl) {
  const text = await fetch(metricsUrl)
    .then((res) => res.text())
    .catch(() => '');
  return [...text.matchAll(/^parley_call_admissions_total\{outcome="refused",reason="([^"]*)"\} (\d+)/gm)].map(([, reason, count]) => `${reason} ×${count}`);
}

function report(r) {
  const { results: x, n } = r;
  const failed = [...x.failures.keys()].filter((k) => typeof k === 'number').length;
  const perCore = Number.isFinite(r.cpu) && r.cpu > 0 ? r.live / (r.cpu / 100) : NaN;
  const pacing = { p50: pct(x.pacing, 50), p99: pct(x.pacing, 99), max: x.pacing.length ? Math.max(...x.pacing) : NaN };
  console.log(
    `${String(n).padStart(5)} ${String(r.live).padStart(4)} | ${fmt(pacing.p50)} ${fmt(pacing.p99)} ${fmt(pacing.max)} ${String(x.pacing.length).padStart(8)} | ${fmt(pct(x.voiceToVoice, 50))} ${fmt(pct(x.voiceToVoice, 95))} ${String(x.turns).padStart(6)} | ${fmt(pct(x.clear, 95))} ${String(x.clear.length).padStart(5)} | ${String(x.stale).padStart(5)} | ${fmt(r.cpu)} ${fmt(r.peakRss, 7)} ${fmt(perCore, 8)} | ${String(failed).padStart(6)} | ${fmt(r.loopP99)}`,
  );
  const pacingOk = pacing.p99 <= PACING_TARGET_MS;
  const verdict = (ok) => (ok ? 'meets' : 'MISSES');
  console.log(
    `        pacing p99 ≤ ${PACING_TARGET_MS} ms: ${verdict(pacingOk)}; ≥ ${CALLS_PER_CORE_TARGET} calls per core of the audio process: ${verdict(perCore >= CALLS_PER_CORE_TARGET)} (${fmt(perCore, 0).trim()}; pid ${r.audioPid}, ${r.audioCommand}); 0 failed calls: ${verdict(failed === 0 && !r.crashed.length)}; 0 stale frames: ${verdict(x.stale === 0)}`,
  );
  if (x.unanswered || x.unclearedBargeIns) console.log(`        turns the agent never answered: ${x.unanswered}; barge-ins never cleared: ${x.unclearedBargeIns} of ${x.bargeIns}`);
  for (const died of r.crashed) console.log(`        CRASH: ${died}`);
  console.log(`        pacing as the media worker sent it (its stream thread, before the network and this process): p99 ≤ ${r.sentP99} ms`);
  if (r.refusals.length) console.log(`        refused before dialling (call admission): ${r.refusals.join(', ')}`);
  const reasons = new Map();
  for (const reason of x.failures.values()) reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  for (const [reason, count] of [...reasons].sort((a, b) => b[1] - a[1]).slice(0, 6)) console.log(`        failed ×${count}: ${reason}`);
  if (EXPLAIN) explainStale(x.staleFrames);
  return pacingOk;
}

/** --explain: each stale frame (its time as the platform's logs write it) with the line's last seconds before it. */
function explainStale(frames) {
  for (const f of frames) {
    console.log(`        stale: call ${f.call} (${f.callId}) at ${new Date(performance.timeOrigin + f.at).toISOString()}: ${f.part}, ${fmt(f.sinceClear, 0).trim()} ms after the clear, caller ${f.state}`);
    for (const e of f.timeline) {
      const span = e.frames > 1 ? ` ×${e.frames} until ${fmt(e.to - f.at, 0).trim()}` : '';
      console.log(`          ${fmt(e.at - f.at, 7)} ms  ${e.what}${span}`);
    }
  }
}

if (PIN) {
  if (AUDIO_CORE < 1) {
    console.error('--pin needs at least 2 cores');
    process.exit(2);
  }
  // Before anything is spawned: the fakes and the platform inherit it; the audio process is moved once it listens.
  pin(process.pid, AUDIO_CORE === 1 ? '0' : `0-${AUDIO_CORE - 1}`);
}
const vendors = await startVendors();
const libs = loadLibs(DIST);
console.log(
  `media bench, ${MODE}: the whole platform over real sockets; ${SECONDS} s measured per N after ${RAMP} s ramp-up and ${WARMUP} s warm-up; fakes: recognizer endpointing ${ENDPOINTING_MS} ms, model first token ${LLM_MS} ms, voice ${VOICE === 'local' ? 'local (offline, in the platform)' : `openai, first audio ${TTS_MS} ms`}; VAD ${VAD}; ${cpus().length} cores, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}, Node ${process.version}${PIN ? `; pinned: the audio process alone on core ${AUDIO_CORE}, everything else on the other core${AUDIO_CORE > 1 ? 's' : ''}` : ''}`,
);
console.log(`v2v is net of ${ENDPOINTING_MS} + ${LLM_MS} + ${VOICE_MS} ms (endpointing + model + voice); clear is from the moment the recognizer can have the barge-in's words`);
console.log('calls live | pacing |Δ−20| ms p50   p99    max   frames | v2v net ms p50  p95  turns | clear p95 (n) | stale | audio cpu %  rss MB calls/core | failed | loadgen loop p99 ms');
let sustained = 0;
let exitCode = 0;
try {
  for (const n of CALLS) {
    const r = await run(n, vendors, libs);
    if (report(r)) sustained = Math.max(sustained, n);
  }
  console.log(`\ncalls sustained with the ${VOICE} voice (largest N with pacing p99 ≤ ${PACING_TARGET_MS} ms at the carrier): ${sustained || `< ${CALLS[0]}`}`);
} catch (error) {
  console.error(error);
  exitCode = 2;
} finally {
  vendors.child.kill('SIGTERM');
}
process.exit(exitCode);
