// One simulated caller, as a person talks, on whatever line a bench gives it: a phone call (phone-call.mjs: Twilio's
// Media Streams, μ-law at 8 kHz) or a browser (browser-call.mjs: the realtime socket, PCM16 at 16 kHz). The caller
// talks in real time: one 20 ms frame every 20 ms, comfort noise between utterances. It listens to the greeting,
// asks a question once the agent is quiet, hears the answer, and talks over every third answer (a barge-in); and
// so on until hung up. A line subclasses SimulatedCaller: start() sets the call up and calls begin() once audio
// flows, `open` says whether it still does, send(frame, at) puts a caller frame on it, leave() hangs up, and what
// the platform sends comes back as onMedia(part, at), onClear(at) and lineClosed(…).
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { CALLER_WORDS, ENDPOINTING_MS } from './vendor-fakes.mjs';

const FRAME_MS = 20;
/** The caller's question and barge-in, in ms of speech (the fake recognizer hears six words in either). */
export const QUESTION_MS = 800;
export const BARGE_MS = 700;
/** The agent has finished speaking when no audio arrived for this long (playout is paced, 20 ms a frame). */
const AGENT_QUIET_MS = 400;
/** A turn the agent does not answer within this long is counted unanswered, and the caller speaks again. */
const ANSWER_TIMEOUT_MS = 10_000;
/** Without tones to tell turns apart (the offline voice), agent frames further apart than this start a new turn. */
const TURN_GAP_MS = 100;
/** How much of the line's past `explain` keeps. */
const EXPLAIN_MS = 6000;

/**
 * The caller's sounds at `rate`, as 20 ms frames each put in the line's form by `encode` (Int16Array → what the
 * line sends): speech (CALLER_WORDS spoken by the offline voice, `speech` the compiled @parley/speech: a real voice,
 * so the neural VAD hears the caller as it hears a person) and low line noise (RMS ≈ 70).
 */
export function callerSounds(rate, encode, speech) {
  const words = speech.callerSpeechPcm16(CALLER_WORDS, rate);
  const noise = new Int16Array(rate);
  let seed = 12345;
  for (let i = 0; i < noise.length; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    noise[i] = Math.round(((seed / 0x7fffffff) * 2 - 1) * 120);
  }
  const samples = (rate * FRAME_MS) / 1000;
  const frames = (pcm) => Array.from({ length: Math.floor(pcm.length / samples) }, (_, i) => encode(pcm.subarray(i * samples, (i + 1) * samples)));
  // An utterance (QUESTION_MS or BARGE_MS) is the words' first frames, which are voiced throughout but for gaps of
  // 40-80 ms between words, far under the fake recognizer's endpointing.
  return { speech: frames(words), noise: frames(noise) };
}

/**
 * The figures every call adds to while `results.measuring` is true:
 *   pacing      |Δ − 20 ms| between consecutive agent frames of one turn (greeting or answer, told apart by their
 *               tones), its first two excluded (the engine sends a 40 ms lead at once); a stall between sentences
 *               of one answer counts, as the caller hears it;
 *   response    caller's last speech frame sent → first agent frame received (what the caller waits);
 *   voiceToVoice the same minus the fakes' fixed delays;
 *   clear       barge-in's last speech frame sent + the recognizer's endpointing (when it can have the words) →
 *               `clear` received;
 *   stale       agent frames of the interrupted answer received after its `clear` (see onMedia), each kept with
 *               the line's last seconds when `explain` (--explain);
 * and, measured or not: failures (call id → reason), unanswered turns, barge-ins never cleared.
 */
export function newResults({ explain = false } = {}) {
  return { measuring: false, explain, staleFrames: [], pacing: [], response: [], voiceToVoice: [], clear: [], stale: 0, unanswered: 0, unclearedBargeIns: 0, turns: 0, bargeIns: 0, failures: new Map() };
}

/**
 * Adds `from`'s figures (a newResults() of another thread's callers, structured-cloned) to `into`; `shift` (ms) moves
 * its stale frames' times onto this thread's clock.
 */
export function mergeResults(into, from, shift = 0) {
  for (const [key, value] of Object.entries(from)) {
    // One by one: a spread of a long run's 100 000 gaps overflows the stack.
    if (Array.isArray(value) && key !== 'staleFrames') for (const x of value) into[key].push(x);
    else if (typeof value === 'number') into[key] += value;
    // Figures grouped by kind (a browser call's `connect` times): their arrays, one by one as above.
    else if (value?.constructor === Object) for (const [k, xs] of Object.entries(value)) for (const x of xs) into[key][k].push(x);
  }
  for (const f of from.staleFrames) into.staleFrames.push({ ...f, at: f.at + shift, timeline: f.timeline.map((e) => ({ ...e, at: e.at + shift, to: e.to + shift })) });
  for (const [index, reason] of from.failures) if (!into.failures.has(index)) into.failures.set(index, reason);
}

/**
 * The measured window of callers in one thread: measure(on) starts or ends it (their figures go to `results`
 * meanwhile) and loopP99() is the thread's event-loop delay p99 over it (ms).
 */
export function measuredWindow(results) {
  const loop = monitorEventLoopDelay({ resolution: 1 });
  return {
    measure(on) {
      results.measuring = on;
      if (on) loop.enable();
      else loop.disable();
    },
    loopP99: () => loop.percentile(99) / 1e6,
  };
}

/** A call's first failure is its reason (`call`: its `index` and `results`). */
export function failCall(call, reason) {
  if (!call.results.failures.has(call.index)) call.results.failures.set(call.index, reason);
}

/**
 * After the hang-up: the call must be recorded as ended by the caller, and the agent must have spoken (`call`: its
 * `index`, `results`, `api`, `callId` and `heardNothing`).
 */
export async function verifyEnded(call) {
  if (!call.callId || call.results.failures.has(call.index)) return;
  const read = await call.api('GET', `/v1/calls/${call.callId}`);
  if (read.status !== 200) return failCall(call, `GET /v1/calls/{id} answered ${read.status}`);
  const { status, end_reason: reason } = read.body;
  if (status !== 'ended' || reason !== 'completed') failCall(call, `recorded ${status}/${reason ?? '-'} instead of ended/completed`);
  if (call.heardNothing) failCall(call, 'the agent never spoke (dead air)');
}

const partName = (part) => (part ? `${part.turn} sentence ${part.sentence}/${part.of}` : 'no tone');

export class SimulatedCaller {
  /**
   * `speechOf(pcm)`: which part of the agent's speech a received frame carries (agent-speech.mjs); undefined for
   * a voice without tones (the caller then goes by timing alone).
   */
  constructor({ index, api, agentId, sounds, speechOf, results, llmMs, ttsMs }) {
    Object.assign(this, { index, api, agentId, sounds, speechOf, results, llmMs, ttsMs });
    this.state = 'dialling';
    this.nextAt = 0;
    this.speechLeft = 0;
    this.spoken = 0;
    this.noiseAt = 0;
    this.lastMediaAt = 0;
    this.runLength = 0;
    this.answers = Math.floor(Math.random() * 3);
    this.clearedAt = -Infinity;
    /** The part of the agent's speech the last frame carried (undefined: unknown). */
    this.lastPart = undefined;
    /** The turn (a part's `turn`) the last `clear` cut, until the caller next asks; its frames meanwhile are stale. */
    this.interrupted = undefined;
    this.connected = false;
    this.hungUp = false;
    /** With `explain`: the line's last seconds (performance.now ms), printed beside each stale frame. */
    this.timeline = [];
  }

  /** With `explain`: notes what happened on the line at `at`; consecutive frames of one part are one entry. */
  note(at, what, frame = false) {
    if (!this.results.explain) return;
    const last = this.timeline.at(-1);
    if (frame && last?.what === what) {
      last.frames++;
      last.to = at;
    } else this.timeline.push({ at, to: at, what, frames: frame ? 1 : 0 });
    while (this.timeline[0].at < at - EXPLAIN_MS) this.timeline.shift();
  }

  fail(reason) {
    failCall(this, reason);
  }

  /** The line is up and carries audio: the caller listens for the greeting and talks from now on. */
  begin() {
    this.connected = true;
    this.state = 'greeting';
    this.stateAt = performance.now();
    this.nextAt = performance.now();
    this.tick();
  }

  /** The platform closed the line (`what`: the line's name); a failure unless the caller hung up. */
  lineClosed(what, code, reason) {
    if (!this.hungUp) this.fail(`${what} closed by the platform (${code} ${reason})`.trim());
  }

  /** The caller hangs up (the line's leave()). */
  async hangUp() {
    this.hungUp = true;
    clearTimeout(this.timer);
    if (!this.connected || this.results.failures.has(this.index)) return;
    await this.leave();
  }

  verifyEnded() {
    return verifyEnded(this);
  }

  get heardNothing() {
    return this.lastMediaAt === 0;
  }

  // ---- the caller's side of the line: a frame every 20 ms, drift-corrected --------------------------------

  tick() {
    if (this.hungUp || !this.open) return;
    const now = performance.now();
    // A stalled load generator loses frames as a network would, rather than bursting them afterwards.
    if (now - this.nextAt > 60) this.nextAt = now;
    while (this.nextAt <= now) {
      this.step(this.nextAt);
      this.nextAt += 20;
    }
    this.timer = setTimeout(() => this.tick(), Math.max(0, this.nextAt - performance.now()));
  }

  /**
   * Decides what the caller does in the 20 ms starting at `now` (the frame's place on the line's 20 ms grid, which
   * the recognizer's endpointing counts in: a frame sent late in a burst does not move the end of the speech) and
   * sends its frame.
   */
  step(now) {
    const r = this.results;
    const quietFor = now - Math.max(this.lastMediaAt, this.stateAt);
    if (this.state === 'hearing' && this.bargeAt !== undefined && now >= this.bargeAt) {
      this.state = 'barging';
      this.bargeAt = undefined;
      this.bargeStartedAt = now;
      this.note(now, 'barge-in speech starts');
      this.speak(BARGE_MS);
      this.cleared = false;
      if (r.measuring) r.bargeIns++;
    } else if ((this.state === 'hearing' || this.state === 'greeting') && this.lastMediaAt > this.stateAt && quietFor >= AGENT_QUIET_MS && (this.lastPart?.last ?? true)) {
      // The agent finished its turn (its last sentence played, then quiet): think a moment, then ask.
      this.setState('thinking');
      this.speakAt = now + 200 + Math.random() * 500;
    } else if (this.state === 'thinking' && now >= this.speakAt) {
      this.setState('asking');
      this.speak(QUESTION_MS);
      // The next answer may be the interrupted one's words again (vendor-fakes.mjs ANSWERS alternate).
      this.interrupted = undefined;
    } else if ((this.state === 'awaiting' || this.state === 'greeting') && now - this.stateAt > ANSWER_TIMEOUT_MS) {
      if (r.measuring) r.unanswered++;
      this.setState('thinking');
      this.speakAt = now;
    }

    let frame;
    if (this.speechLeft > 0) {
      frame = this.sounds.speech[this.spoken++ % this.sounds.speech.length];
      if (--this.speechLeft === 0) this.endOfSpeech(now);
    } else {
      frame = this.sounds.noise[this.noiseAt++ % this.sounds.noise.length];
    }
    this.send(frame, now);
  }

  /** Starts an utterance of `ms`, from the words' beginning. */
  speak(ms) {
    this.speechLeft = ms / FRAME_MS;
    this.spoken = 0;
  }

  endOfSpeech(now) {
    this.lastSpeechAt = now;
    this.note(now, 'speech ends (last frame)');
    if (this.state === 'barging' && !this.cleared) {
      // Not cut yet: the recognizer's endpointing may still be running; the clear decides (see onClear).
      this.setState('barge-ended');
      return;
    }
    this.setState('awaiting');
  }

  setState(state) {
    this.state = state;
    this.stateAt = performance.now();
    this.note(this.stateAt, `state ${state}`);
  }

  // ---- what the platform sends ------------------------------------------------------------------------------

  onMedia(part, at) {
    const r = this.results;
    this.note(at, `media: ${partName(part)}`, true);
    if (this.isStale(part, at)) {
      if (r.measuring) r.stale++;
      if (r.measuring && r.explain) r.staleFrames.push({ call: this.index, callId: this.callId, at, sinceClear: at - this.clearedAt, part: partName(part), state: this.state, timeline: this.timeline.map((e) => ({ ...e })) });
      return;
    }
    const gap = at - this.lastMediaAt;
    // Two answers in a row differ (vendor-fakes.mjs ANSWERS), so a first sentence after another part begins a turn.
    const startsTurn = part ? part.first && part !== this.lastPart : gap > TURN_GAP_MS;
    if (startsTurn) this.runLength = 0;
    else if (++this.runLength > 2 && r.measuring) r.pacing.push(Math.abs(gap - 20));
    this.lastMediaAt = at;
    if (part) this.lastPart = part;

    if (this.state === 'greeting') this.setState('hearing');
    else if (this.state === 'awaiting' && startsTurn) {
      if (r.measuring) {
        r.response.push(at - this.lastSpeechAt);
        r.voiceToVoice.push(at - this.lastSpeechAt - ENDPOINTING_MS - this.llmMs - this.ttsMs);
        r.turns++;
      }
      this.setState('hearing');
      // Every third answer is talked over, 0.5-1.5 s into it.
      if (++this.answers % 3 === 0) this.bargeAt = at + 500 + Math.random() * 1000;
    } else if (this.state === 'barge-ended' && at - this.lastSpeechAt > ENDPOINTING_MS + 2000) {
      // The agent went on talking two seconds after the barge-in's words were complete: it was not cut.
      if (r.measuring) r.unclearedBargeIns++;
      this.setState('hearing');
    }
  }

  /**
   * After a `clear`, the turn it cut must stop. By ear (the fake voices): a frame of the turn that was playing when
   * the clear came is that turn's, until the caller asks again — the answer to the barge-in's words is the other of
   * ANSWERS, and only the answer after the next question sounds like the interrupted one. No timing: a rule "sooner
   * than --llm-ms + --tts-ms after the clear" took the next answer's first frames for stale ones (why: the `stale`
   * entry in bench/media.mjs's header). A silent frame (a sentence's padded tail) has no tone and is not counted.
   * Without tones (the offline voice) only that timing rule is left, with the model's delay alone: approximate.
   */
  isStale(part, at) {
    if (!this.speechOf) return at - this.clearedAt < this.llmMs + this.ttsMs;
    return part !== undefined && part.turn === this.interrupted;
  }

  onClear(at) {
    const r = this.results;
    this.note(at, `clear (caller ${this.state})`);
    this.clearedAt = at;
    this.interrupted = this.lastPart?.turn;
    if (this.state !== 'barging' && this.state !== 'barge-ended') return;
    this.cleared = true;
    if (r.measuring) r.clear.push(at - (this.bargeStartedAt + BARGE_MS - 20) - ENDPOINTING_MS);
    if (this.state === 'barge-ended') this.setState('awaiting');
  }
}
