#!/usr/bin/env node
// The media plane's capacity as users meet it: the WHOLE platform, running as real processes, driven as a carrier
// drives it, over real sockets.
//
//   npx nx run standalone:build            (distributed: npx nx run-many -t build -p gateway agents calls media-worker webhook-dispatcher)
//   npm run bench:media                    # standalone, N = 10, 50, 100, 200; 120 s measured after 10 s warm-up
//   npm run bench:media -- --mode distributed --calls 10,50 --seconds 30 --warmup 5 --llm-ms 150 --tts-ms 100
//   npm run bench:media -- --voice local    # the offline voice: the calls its synthesis carries at real time
// Other flags: --ramp <s> (default 5) over which the calls are placed; --dist <dir> (default dist) the build to run;
// --vad silero|energy (default silero, the platform's own default) the media worker's VAD. The caller speaks real
// words (the offline voice's rendering of CALLER_WORDS, over line noise between utterances), so Silero hears the
// caller start and stop as it hears a person, and the figures carry both its cost and its decisions. (Before
// 28 November 2026 the caller's speech was a 250 Hz tone, which Silero does not take for a voice: figures taken
// then had the turn-taking driven by the recognizer alone.)
// --pin (Linux, 2+ cores, taskset): the process carrying the audio gets the last core to itself, and this load
// generator, the vendor fakes and the rest of the platform (which inherit this process's affinity) share the others —
// as a deployment gives media workers dedicated cores (Kubernetes' static CPU manager). Its calls per core then count
// one core that nothing else competes for; without --pin every process shares every core. In distributed mode the
// machine's PostgreSQL and NATS are not pinned.
// --flow: the agent follows a conversation flow (BENCH_FLOW in bench/media/load.mjs): the call opens on an llm node
// with two intent edges, so every caller's turn makes a routing call (one JSON completion, not streamed) beside the
// node's answer, which starts at once and is kept when the flow stays; the fake model answers the routing call after
// --route-ms (default --llm-ms) with no edge (the flow stays: the common turn). Compare `response` with and without
// --flow for what a flow adds per turn.
// --caller-threads <K> (default one per 25 calls, at most 8): the threads the load generator spreads the calls'
// media streams over (bench/media/caller-threads.mjs). Each thread carries its shard of carrier WebSockets with its
// own event loop and asks for the priority the media worker's stream thread has (nice -10, where the process may:
// root or CAP_SYS_NICE; the run says what it got), as a carrier's media edge runs on machines of its own: in one
// loop at normal priority, 100 callers' readings queued behind each other and behind the platform on the shared
// cores, and the carrier read 20-26 ms p99 where the wire said 3-4 (the run of 29 November 2026 in docs/engine.md).
// --caller-threads 1 puts every stream in one loop, as the old instrument did (but at the raised priority, and
// without call control, which stays in the main thread).
// Diagnostics: --wire (needs tcpdump and the right to capture) also prints the pacing of the agent's frames as
// they left the platform, from a packet capture on loopback over the measured window (bench/media/wire.mjs): the
// kernel's timestamps, so the load generator's own lateness on the shared cores is not in it. --explain prints
// each stale frame (call id, time, part, time since the clear, the caller's state) with the line's last 6 s;
// --stalls preloads bench/media/stall-watch.cjs into the platform's processes and prints, for the audio process's
// main thread over the measured window, its holds over 50 ms (the longest; one longer than the stream thread's queue
// of each call is heard as silence on every call) and its major GCs (the longest pause);
// BENCH_LOG_LEVEL sets the platform's LOG_LEVEL (default warn; info logs each barge-in by call
// id); BENCH_LOG_FILE appends the platform's output to that file; BENCH_NODE_OPTIONS becomes its NODE_OPTIONS (e.g.
// "--cpu-prof --cpu-prof-dir=/tmp/prof" profiles every platform process, the media worker's included).
//
// Processes: the platform (standalone: one command; distributed: the five services, on this machine's PostgreSQL
// and NATS with a NATS_NAMESPACE of its own), fresh database per run (DATABASE_URL, else embedded in standalone);
// the vendor fakes in a process of their own (Deepgram live WebSocket, an OpenAI-compatible model, the `openai`
// synthesizer: bench/media/vendor-fakes.mjs); and this one, the load generator: the fake Twilio REST server, which
// answers each call, and one simulated caller per call (bench/media/phone-call.mjs, its behaviour
// bench/media/caller.mjs, the run bench/media/load.mjs, shared with bench/browser.mjs), whose Media Streams
// WebSocket (μ-law, base64 JSON, marks, clear) runs in one of the caller threads. Each N gets a fresh platform.
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
//   response the caller's wait: last speech frame sent → the answer's first frame received (p50/p95), gross: the
//            fakes' delays (endpointing, model, voice) included;
//   v2v      voice-to-voice: the caller's last speech frame sent → the answer's first frame received, MINUS the
//            fakes' fixed delays: the recognizer's endpointing (300 ms of silence after the speech), the model's
//            first token (--llm-ms; with --flow the longer of it and --route-ms) and the voice's first audio
//            (--tts-ms; 0 with --voice local, whose synthesis is the platform's own). What remains is the
//            platform's: p50/p95;
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
//            (live calls / its cores busy); on a line of its own, that CPU by thread (/proc/<pid>/task: the main
//            thread, the stream thread and any other worker thread, V8's GC helpers) with each kind's voluntary
//            context switches a second, i.e. how often it was woken: a cost paid per wake-up shows there first;
//   control, db  CPU % (of one core) of the rest of the platform (standalone: the one command's process, without
//            the media worker's child; distributed: the four other services) and of the machine's PostgreSQL
//            processes (the embedded server's, or the server the run uses: on a shared server, everyone's);
//   failed   calls that did not end normally: a POST /v1/calls not 201 (5xx included), a status callback refused,
//            a refused media stream, a stream the platform closed, a call not recorded ended/completed, or one
//            whose agent never spoke;
//   loadgen  the caller threads' event-loop delay p99 (the worst thread's): if high, the figures carry the load
//            generator's own lateness.
// Targets (verdicts printed): pacing p99 ≤ 5 ms at ≥ 200 calls per core of the audio process, 0 failed calls,
// 0 stale frames. bench/engine.mjs (npm run bench:engine) is the engine alone, in-process: a diagnostic.
import { agentSpeech } from './media/agent-speech.mjs';
import { newResults } from './media/caller.mjs';
import { benchMain, benchOptions, describeRun, figures, fmt, PACING_TARGET_MS, pct, printFindings, runCalls } from './media/load.mjs';
import { PHONE_RATE, PhoneCall, phoneSounds } from './media/phone-call.mjs';
import { callerThreadsFor, CallerThreads } from './media/caller-threads.mjs';
import { ANSWERS, ENDPOINTING_MS, GREETING } from './media/vendor-fakes.mjs';
import { captureWire, wireUnavailable } from './media/wire.mjs';

const o = benchOptions('10,50,100,200');
const noWire = o.wire && wireUnavailable();
if (noWire) {
  console.error(`--wire: ${noWire}`);
  process.exit(2);
}
const CALLS_PER_CORE_TARGET = 200;

async function run(n, vendors, libs) {
  const twilio = new libs.twilio.FakeTwilioServer();
  const twilioUrl = await twilio.start();
  const speechOf = agentSpeech({ libs, voice: o.voice, greeting: GREETING, answers: ANSWERS, rate: PHONE_RATE });
  const results = newResults({ explain: o.explain });
  const threads = new CallerThreads(o.callerThreads ?? callerThreadsFor(n), { kind: 'phone', dist: o.dist, sounds: phoneSounds(libs), voice: o.voice, llmMs: o.modelMs, ttsMs: o.voiceMs, explain: o.explain });
  try {
    return await runCalls(o, {
      n,
      vendors,
      results,
      env: { TWILIO_ACCOUNT_SID: twilio.accountSid, TWILIO_AUTH_TOKEN: twilio.authToken, TWILIO_API_BASE_URL: twilioUrl, TWILIO_FROM_NUMBER: '+15550009999' },
      newCall: (call) => new PhoneCall({ ...call, twilio, line: threads.line(call.index), parseTwiml: libs.twilio.parseConnectStreamTwiml }),
      callers: threads,
      wire: o.wire ? (port) => captureWire(port, speechOf && ((mulaw) => speechOf(libs.audio.mulawToPcm16(mulaw)))) : undefined,
    });
  } finally {
    await threads.stop();
    await twilio.stop();
  }
}

function report(r) {
  const { results: x, n } = r;
  const { failed, perCore, pacing } = figures(r);
  console.log(
    `${String(n).padStart(5)} ${String(r.live).padStart(4)} | ${fmt(pacing.p50)} ${fmt(pacing.p99)} ${fmt(pacing.max)} ${String(x.pacing.length).padStart(8)} | ${fmt(pct(x.response, 50))} ${fmt(pct(x.response, 95))} | ${fmt(pct(x.voiceToVoice, 50))} ${fmt(pct(x.voiceToVoice, 95))} ${String(x.turns).padStart(6)} | ${fmt(pct(x.clear, 95))} ${String(x.clear.length).padStart(5)} | ${String(x.stale).padStart(5)} | ${fmt(r.cpu)} ${fmt(r.peakRss, 7)} ${fmt(perCore, 8)} | ${fmt(r.controlCpu, 7)} ${fmt(r.dbCpu, 6)} | ${String(failed).padStart(6)} | ${fmt(r.loopP99)}`,
  );
  return printFindings(o, r, { perCoreTarget: CALLS_PER_CORE_TARGET });
}

let sustained = 0;
await benchMain(o, {
  header: () => [
    `media bench, ${describeRun(o)}`,
    `v2v is response net of ${ENDPOINTING_MS} + ${o.modelMs} + ${o.voiceMs} ms (endpointing + model${o.flow ? ' or routing, the longer' : ''} + voice); clear is from the moment the recognizer can have the barge-in's words`,
    'calls live | pacing |Δ−20| ms p50   p99    max   frames | response ms p50  p95 | v2v net ms p50  p95  turns | clear p95 (n) | stale | audio cpu %  rss MB calls/core | control db cpu % | failed | loadgen loop p99 ms',
  ],
  perN: async (n, vendors, libs) => {
    if (report(await run(n, vendors, libs))) sustained = Math.max(sustained, n);
  },
  summary: () => `calls sustained with the ${o.voice} voice (largest N with pacing p99 ≤ ${PACING_TARGET_MS} ms at the carrier): ${sustained || `< ${o.calls[0]}`}`,
});
