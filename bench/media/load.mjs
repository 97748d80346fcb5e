// What the two benches of the media plane share: bench/media.mjs (phone calls over Twilio's Media Streams) and
// bench/browser.mjs (browser calls over the realtime socket). Their flags, the vendor fakes' process, pinning, one
// run of N simulated calls on a fresh platform (placed over --ramp, measured for --seconds after --warmup, hung up,
// checked), and the figures, verdicts and diagnostics both print.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { measuredWindow } from './caller.mjs';
import { loadLibs, missingBuilds } from './build.mjs';
import { BENCH_KEY, startPlatform } from './platform.mjs';
import { commandOf, cpuPercent, cpuSecondsOf, pidListeningOn, postgresPids, threadsOf, threadUsage, usageOf } from './process-usage.mjs';
import { ENDPOINTING_MS, GREETING } from './vendor-fakes.mjs';

/**
 * The agent's flow with --flow: the call opens on an llm node whose two intent edges the routing call decides at
 * every caller's turn (the fake model answers no edge, so the flow stays: the common turn). The node's answer is
 * started beside the routing call and kept; what the flow adds is the routing call's cost on the platform's side.
 */
export const BENCH_FLOW = {
  start: 'front_desk',
  nodes: [
    {
      id: 'front_desk',
      prompt: 'Answer questions about the opening hours.',
      edges: [
        { to: 'sales', when: 'the caller wants to buy something or asks about prices', priority: 1 },
        { to: 'person', when: 'the caller asks to speak to a person', priority: 0 },
      ],
    },
    { id: 'sales', prompt: 'Help the caller choose a plan.' },
    { id: 'person', type: 'static', say: 'Let me put you through.' },
  ],
};

/** Outbound pacing target: every frame 20 ± 5 ms after the one before, at p99. */
export const PACING_TARGET_MS = 5;
const SETTLE_MS = 3000;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const pct = (xs, p) => {
  if (!xs.length) return NaN;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
export const fmt = (x, width = 6) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a').padStart(width);
const verdict = (ok) => (ok ? 'meets' : 'MISSES');

/**
 * The flags both benches take (each bench's header documents them), with `defaultCalls` for --calls; exits with
 * the reason on a bad flag or a missing build.
 */
export function benchOptions(defaultCalls) {
  const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []));
  const voice = args.voice ?? 'openai';
  const o = {
    mode: args.mode ?? 'standalone',
    calls: String(args.calls ?? defaultCalls)
      .split(',')
      .map(Number),
    seconds: Number(args.seconds ?? 120),
    warmup: Number(args.warmup ?? 10),
    ramp: Number(args.ramp ?? 5),
    llmMs: Number(args['llm-ms'] ?? 150),
    ttsMs: Number(args['tts-ms'] ?? 100),
    // --flow: the agent follows BENCH_FLOW; its routing call is answered after --route-ms (default --llm-ms).
    flow: 'flow' in args,
    routeMs: Number(args['route-ms'] ?? args['llm-ms'] ?? 150),
    // The agent's voice: the `openai` synthesizer against its fake (first audio after --tts-ms), or `local`, the
    // offline voice synthesizing in the platform itself (its time is the platform's own: nothing is subtracted).
    voice,
    vad: args.vad ?? 'silero',
    explain: 'explain' in args,
    wire: 'wire' in args,
    stalls: 'stalls' in args,
    pin: 'pin' in args,
    // --caller-threads <K>: the threads the callers' media runs in (caller-threads.mjs); default one per 25 calls.
    callerThreads: args['caller-threads'] === undefined ? undefined : Number(args['caller-threads']),
    audioCore: cpus().length - 1,
    dist: resolve(args.dist ?? join(import.meta.dirname, '..', '..', 'dist')),
  };
  o.voiceMs = voice === 'local' ? 0 : o.ttsMs;
  // On a flow the node's answer starts beside the routing call and is kept when the flow stays: its first token
  // is there after the longer of the two.
  o.modelMs = o.flow ? Math.max(o.llmMs, o.routeMs) : o.llmMs;
  if (!['standalone', 'distributed'].includes(o.mode) || !['openai', 'local'].includes(voice) || !['silero', 'energy'].includes(o.vad)) {
    console.error('--mode is standalone or distributed; --voice is openai or local; --vad is silero or energy');
    process.exit(2);
  }
  const missing = missingBuilds(o.dist, o.mode);
  if (missing.length) {
    console.error(`Build the platform first:\n  ${missing.join('\n  ')}`);
    process.exit(1);
  }
  if (o.callerThreads !== undefined && !(Number.isInteger(o.callerThreads) && o.callerThreads >= 1)) {
    console.error('--caller-threads is a whole number ≥ 1');
    process.exit(2);
  }
  if (o.pin && o.audioCore < 1) {
    console.error('--pin needs at least 2 cores');
    process.exit(2);
  }
  return o;
}

/** Every thread of `pid` onto `cores` (a taskset list such as "0" or "0-2"). */
const pin = (pid, cores) => execFileSync('taskset', ['-a', '-p', '-c', cores, String(pid)], { stdio: 'ignore' });

/**
 * With --pin, this process goes to every core but the last before anything is spawned: the fakes and the platform
 * inherit it; the audio process is moved to the last core once it listens (runCalls).
 */
function pinLoadGenerator(o) {
  if (o.pin) pin(process.pid, o.audioCore === 1 ? '0' : `0-${o.audioCore - 1}`);
}

/** The vendor fakes' process; resolves to their URLs and keys (and `child`, to kill at the end). */
async function startVendors(o) {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'vendor-fakes.mjs'), '--dist', o.dist, '--llm-ms', String(o.llmMs), '--tts-ms', String(o.ttsMs), '--route-ms', String(o.routeMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the vendor fakes exited (${code})`)));
  });
  return { child, ...JSON.parse(line) };
}

/**
 * A bench's main: pins (--pin) and starts the vendor fakes, prints `header()`'s lines, runs `perN(n, vendors, libs)`
 * for each N of --calls in turn, prints `summary()`, and exits (2 when a run could not be made).
 */
export async function benchMain(o, { header, perN, summary }) {
  pinLoadGenerator(o);
  const vendors = await startVendors(o);
  const libs = loadLibs(o.dist);
  for (const line of header()) console.log(line);
  let exitCode = 0;
  try {
    for (const n of o.calls) await perN(n, vendors, libs);
    console.log(`\n${summary()}`);
  } catch (error) {
    console.error(error);
    exitCode = 2;
  } finally {
    vendors.child.kill('SIGTERM');
  }
  process.exit(exitCode);
}

/** The run's conditions, for the first line a bench prints: fakes' delays, the machine and its load, pinning. */
export function describeRun(o) {
  const voice = o.voice === 'local' ? 'local (offline, in the platform)' : `openai, first audio ${o.ttsMs} ms`;
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  const pinned = o.pin ? `; pinned: the audio process alone on core ${o.audioCore}, everything else on the other core${o.audioCore > 1 ? 's' : ''}` : '';
  const flow = o.flow ? `; flow: an llm start node with 2 intent edges, routing answered after ${o.routeMs} ms (no edge: the flow stays)` : '';
  return `${o.mode}: the whole platform over real sockets; ${o.seconds} s measured per N after ${o.ramp} s ramp-up and ${o.warmup} s warm-up; fakes: recognizer endpointing ${ENDPOINTING_MS} ms, model first token ${o.llmMs} ms, voice ${voice}${flow}; VAD ${o.vad}; ${cpus().length} cores, load average ${load}, Node ${process.version}${pinned}`;
}

/** An API client of the platform at `baseUrl` with the bench's key: resolves to { status, body } (status 0: no answer). */
function apiOf(baseUrl) {
  return async (method, path, body) => {
    try {
      const res = await fetch(`${baseUrl}${path}`, {
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
}

/**
 * One N: a fresh platform (`env`: the carrier's settings, beside the vendors'), an agent created through the API,
 * then `n` calls from `newCall({ index, api, agentId, results, llmMs, ttsMs })` (a SimulatedCaller's options; it adds
 * the line's) started over --ramp; after --warmup,
 * --seconds measured into `results` with the audio process's CPU and memory and the callers' event-loop delay;
 * then every call hangs up and must be recorded ended/completed. `callers`: where the callers' media runs when not
 * in this thread (CallerThreads: measure(on), collect(results, calls) → { loopP99: its loops' delay p99, callers }).
 */
export async function runCalls(o, { n, vendors, env, newCall, results, wire, callers = inThisThread(results) }) {
  const stalls = o.stalls ? stallWatch() : undefined;
  const platform = await startPlatform({
    mode: o.mode,
    dist: o.dist,
    calls: n,
    env: {
      STT_PROVIDERS: 'deepgram',
      TTS_PROVIDERS: o.voice,
      VAD: o.vad,
      DEEPGRAM_API_KEY: vendors.keys.deepgram,
      DEEPGRAM_BASE_URL: vendors.deepgramUrl,
      LLM_BASE_URL: vendors.llmUrl,
      LLM_API_KEY: vendors.keys.openai,
      LLM_MODEL: 'fake-model',
      POST_CALL_MODEL: 'fake-model',
      OPENAI_SPEECH_BASE_URL: vendors.speechUrl,
      OPENAI_SPEECH_API_KEY: vendors.keys.openai,
      ...stalls?.env,
      ...env,
    },
  });
  const api = apiOf(platform.baseUrl);
  try {
    const agent = await api('POST', '/v1/agents', {
      name: 'Bench front desk',
      mode: 'conversation',
      languages: [{ code: 'en-US', stt_provider: 'deepgram', tts_provider: o.voice, greeting: GREETING, system_prompt: 'Be brief.' }],
      conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
      ...(o.flow ? { flow: BENCH_FLOW } : {}),
    });
    if (agent.status !== 201) throw new Error(`could not create the agent: ${agent.status} ${JSON.stringify(agent.body)}`);
    const audioPid = pidListeningOn(platform.mediaPort);
    if (!audioPid) throw new Error(`no process listens on MEDIA_PORT ${platform.mediaPort}`);
    const audioCommand = commandOf(audioPid);
    if (o.pin) pin(audioPid, String(o.audioCore));

    // A deployment is not dialled into at its first breath: its start-up work (and the load reports call admission
    // takes from it) settles first.
    await sleep(SETTLE_MS);
    const calls = Array.from({ length: n }, (_, index) => newCall({ index, api, agentId: agent.body.id, results, llmMs: o.modelMs, ttsMs: o.voiceMs }));
    const started = Promise.all(calls.map((call, i) => sleep((i * o.ramp * 1000) / n).then(() => call.start().catch((error) => call.fail(`could not start: ${error.message}`)))));
    await sleep((o.ramp + o.warmup) * 1000);
    await started;

    const capture = wire ? await wire(platform.mediaPort) : undefined;
    await callers.measure(true);
    // Calls per core counts the calls actually carried: a refused or failed call costs the audio process nothing.
    const live = calls.filter((call) => call.open).length;
    const sentBefore = await sentPacing(platform.mediaMetricsUrl);
    const from = { ...usageOf(audioPid), threads: threadsOf(audioPid), at: performance.now() };
    const windowFrom = Date.now();
    // The rest of the platform (the control plane) and the database: what the audio process shares a machine with.
    const controlPids = platform.pids().filter((pid) => pid !== audioPid);
    const controlFrom = cpuSecondsOf(controlPids);
    const dbFrom = cpuSecondsOf(postgresPids());
    let peakRss = from.rssMb;
    const sampler = setInterval(() => {
      try {
        peakRss = Math.max(peakRss, usageOf(audioPid).rssMb);
      } catch {
        // the process is gone: reported below
      }
    }, 1000);
    await sleep(o.seconds * 1000);
    await callers.measure(false);
    const stallsSeen = stalls?.read(audioPid, windowFrom, Date.now());
    const wireGaps = await capture?.stop();
    const sentAfter = await sentPacing(platform.mediaMetricsUrl);
    clearInterval(sampler);
    let cpu = NaN;
    let threads = [];
    const elapsed = (performance.now() - from.at) / 1000;
    try {
      const to = usageOf(audioPid);
      cpu = ((to.cpuSeconds - from.cpuSeconds) / elapsed) * 100;
      threads = threadUsage(from.threads, threadsOf(audioPid), elapsed);
      peakRss = Math.max(peakRss, to.rssMb);
    } catch {
      // the audio process died during the run
    }
    const controlCpu = cpuPercent(controlFrom, cpuSecondsOf(controlPids), elapsed);
    const dbCpu = cpuPercent(dbFrom, cpuSecondsOf(postgresPids()), elapsed);

    // Hang-ups are spread over a second, as people do, then every call must be recorded as ended by the caller.
    await Promise.all(calls.map((call, i) => sleep((i * 1000) / n).then(() => call.hangUp())));
    await sleep(3000);
    const refusals = await refusalsByReason(platform.callsMetricsUrl);
    const { loopP99, callers: callersRan } = await callers.collect(results, calls);
    for (let i = 0; i < calls.length; i += 20) await Promise.all(calls.slice(i, i + 20).map((call) => call.verifyEnded()));
    for (const died of platform.exited) results.failures.set(`process:${died}`, died);
    const sentP99 = bucketPercentile(sentBefore, sentAfter, 0.99);
    return { n, live, results, cpu, threads, controlCpu, dbCpu, peakRss, audioPid, audioCommand, refusals, loopP99, callers: callersRan, sentP99, wireGaps, stalls: stallsSeen, crashed: platform.exited };
  } finally {
    await platform.stop();
    stalls?.remove();
  }
}

/**
 * --stalls: the platform's processes preload stall-watch.cjs, which notes their main threads' holds and major GCs in
 * a file; read(pid, from, to) gives the audio process's over the measured window (wall-clock ms).
 */
function stallWatch() {
  const file = join(tmpdir(), `parley-bench-stalls-${process.pid}-${Date.now()}.jsonl`);
  const preload = `--require ${join(import.meta.dirname, 'stall-watch.cjs')}`;
  return {
    env: { NODE_OPTIONS: [process.env.BENCH_NODE_OPTIONS, preload].filter(Boolean).join(' '), BENCH_STALL_FILE: file },
    read(pid, from, to) {
      const seen = existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line)) : [];
      const mine = seen.filter((e) => e.pid === pid && e.at >= from && e.at <= to);
      return { holds: mine.filter((e) => e.hold !== undefined).map((e) => e.hold), gcs: mine.filter((e) => e.gc !== undefined).map((e) => e.gc), seconds: (to - from) / 1000 };
    },
    remove: () => rmSync(file, { force: true }),
  };
}

/** Callers whose media runs in this thread: `results` is theirs, the loop's delay this thread's. */
function inThisThread(results) {
  const window = measuredWindow(results);
  return { measure: window.measure, collect: () => ({ loopP99: window.loopP99() }) };
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

/** A run's headline figures: failed calls, live calls per core of the audio process, pacing at the caller. */
export function figures(r) {
  const x = r.results;
  return {
    failed: [...x.failures.keys()].filter((k) => typeof k === 'number').length,
    perCore: Number.isFinite(r.cpu) && r.cpu > 0 ? r.live / (r.cpu / 100) : NaN,
    pacing: { p50: pct(x.pacing, 50), p99: pct(x.pacing, 99), max: pct(x.pacing, 100) },
  };
}

/**
 * The verdicts (pacing; calls per core against `perCoreTarget` when given, else the figure alone; failures; stale
 * frames) and what explains them: unanswered turns, crashes, pacing as the worker sent it, admission's refusals,
 * failures by reason, and with --explain each stale frame. Returns whether pacing met its target.
 */
export function printFindings(o, r, { perCoreTarget } = {}) {
  const x = r.results;
  const { failed, perCore, pacing } = figures(r);
  const pacingOk = pacing.p99 <= PACING_TARGET_MS;
  const perCoreText = `${fmt(perCore, 0).trim()}; pid ${r.audioPid}, ${r.audioCommand}`;
  const perCoreVerdict = perCoreTarget ? `≥ ${perCoreTarget} calls per core of the audio process: ${verdict(perCore >= perCoreTarget)} (${perCoreText})` : `calls per core of the audio process: ${perCoreText}`;
  console.log(`        pacing p99 ≤ ${PACING_TARGET_MS} ms: ${verdict(pacingOk)}; ${perCoreVerdict}; 0 failed calls: ${verdict(failed === 0 && !r.crashed.length)}; 0 stale frames: ${verdict(x.stale === 0)}`);
  if (x.unanswered || x.unclearedBargeIns) console.log(`        turns the agent never answered: ${x.unanswered}; barge-ins never cleared: ${x.unclearedBargeIns} of ${x.bargeIns}`);
  for (const died of r.crashed) console.log(`        CRASH: ${died}`);
  if (r.callers) console.log(`        the callers' lines: ${r.callers}; their event loops' delay p99 ${fmt(r.loopP99, 0).trim()} ms`);
  console.log(`        pacing as the media worker sent it (its stream thread, before the network and this process): p99 ≤ ${r.sentP99} ms`);
  // Where the audio process's CPU goes, by thread, and how often each kind of thread is woken: a cost paid per
  // wake-up rather than per frame shows here first.
  const threads = r.threads.filter((t) => t.cpu >= 0.5).map((t) => `${t.name}${t.threads > 1 ? ` ×${t.threads}` : ''} ${fmt(t.cpu, 0).trim()} % (${Math.round(t.wakeUps)} wake-ups/s)`);
  if (threads.length) console.log(`        the audio process by thread, share of a core: ${threads.join(', ')}`);
  if (r.stalls) {
    const { holds, gcs, seconds } = r.stalls;
    const longest = (xs) => (xs.length ? `, the longest ${fmt(Math.max(...xs), 0).trim()} ms` : '');
    console.log(`        the audio process's main thread over ${fmt(seconds, 0).trim()} s: ${holds.length} holds over 50 ms${longest(holds)} (one longer than the stream thread's queue, STREAM_LEAD_FRAMES × 20 ms, is heard); ${gcs.length} major GCs${longest(gcs)}`);
  }
  if (r.wireGaps) {
    const w = r.wireGaps;
    console.log(`        pacing on the wire (a packet capture of the frames as they left the platform, this process's lateness excluded): p50 ${fmt(pct(w, 50), 0).trim()} p99 ${fmt(pct(w, 99), 0).trim()} max ${fmt(pct(w, 100), 0).trim()} ms over ${w.length} frames`);
  }
  if (r.refusals.length) console.log(`        refused before dialling (call admission): ${r.refusals.join(', ')}`);
  const reasons = new Map();
  for (const reason of x.failures.values()) reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  for (const [reason, count] of [...reasons].sort((a, b) => b[1] - a[1]).slice(0, 6)) console.log(`        failed ×${count}: ${reason}`);
  if (o.explain) explainStale(x.staleFrames);
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
