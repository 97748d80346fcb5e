// One simulated phone call, as Twilio and a person produce it: the call is placed through the platform's API, the
// fake Twilio answers it (status callbacks) and opens the Media Streams WebSocket (μ-law, base64 JSON, marks echoed
// when played, `clear` honoured), and the caller talks in real time: one 20 ms frame every 20 ms, comfort noise
// between utterances. The caller listens to the greeting, asks a question once the agent is quiet, hears the
// answer, and talks over every third answer (a barge-in); and so on until hung up.
import { performance } from 'node:perf_hooks';
import { ENDPOINTING_MS } from './vendor-fakes.mjs';

const RATE = 8000;
const FRAME_BYTES = 160;
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

/** The caller's sounds as μ-law frames: speech (a loud 250 Hz tone) and low line noise (RMS ≈ 70). */
export function callerSounds(audio) {
  const tone = new Int16Array(RATE);
  for (let i = 0; i < tone.length; i++) tone[i] = Math.round(6000 * Math.sin((2 * Math.PI * 250 * i) / RATE));
  const noise = new Int16Array(RATE);
  let seed = 12345;
  for (let i = 0; i < noise.length; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    noise[i] = Math.round(((seed / 0x7fffffff) * 2 - 1) * 120);
  }
  const frames = (pcm) => {
    const mulaw = audio.pcm16ToMulaw(pcm);
    return Array.from({ length: mulaw.length / FRAME_BYTES }, (_, i) => mulaw.subarray(i * FRAME_BYTES, (i + 1) * FRAME_BYTES));
  };
  return { speech: frames(tone), noise: frames(noise) };
}

/**
 * The figures every call adds to while `results.measuring` is true:
 *   pacing      |Δ − 20 ms| between consecutive agent frames of one turn (greeting or answer, told apart by their
 *               tones), its first two excluded (the engine sends a 40 ms lead at once); a stall between sentences
 *               of one answer counts, as the caller hears it;
 *   voiceToVoice caller's last speech frame sent → first agent frame received, minus the fakes' fixed delays;
 *   clear       barge-in's last speech frame sent + the recognizer's endpointing (when it can have the words) →
 *               `clear` received;
 *   stale       agent frames of the interrupted answer received after its `clear` (see onMedia), each kept with
 *               the line's last seconds when `explain` (bench/media.mjs --explain);
 * and, measured or not: failures (call id → reason), unanswered turns, barge-ins never cleared.
 */
export function newResults({ explain = false } = {}) {
  return { measuring: false, explain, staleFrames: [], pacing: [], voiceToVoice: [], clear: [], stale: 0, unanswered: 0, unclearedBargeIns: 0, turns: 0, bargeIns: 0, failures: new Map() };
}

const partName = (part) => (part ? `${part.turn} sentence ${part.sentence}/${part.of}` : 'no tone');

export class SimulatedCall {
  /**
   * `speechOf(payload)`: which part of the agent's speech a received frame carries (agent-speech.mjs); undefined for
   * a voice without tones (the caller then goes by timing alone).
   */
  constructor({ index, twilio, api, agentId, sounds, speechOf, results, llmMs, ttsMs }) {
    Object.assign(this, { index, twilio, api, agentId, sounds, speechOf, results, llmMs, ttsMs });
    this.state = 'dialling';
    this.nextAt = 0;
    this.speechLeft = 0;
    this.noiseAt = 0;
    this.lastMediaAt = 0;
    this.runLength = 0;
    this.answers = Math.floor(Math.random() * 3);
    this.clearedAt = -Infinity;
    /** The part of the agent's speech the last frame carried (undefined: unknown). */
    this.lastPart = undefined;
    /** The turn (a part's `turn`) the last `clear` cut, until the caller next asks; its frames meanwhile are stale. */
    this.interrupted = undefined;
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
    if (!this.results.failures.has(this.index)) this.results.failures.set(this.index, reason);
  }

  /** Places the call through the API, answers it at the carrier and opens its media stream. */
  async start() {
    const to = `+1555${String(1000000 + this.index).slice(-7)}`;
    const placed = await this.api('POST', '/v1/calls', { agent_id: this.agentId, to });
    if (placed.status !== 201) return this.fail(`POST /v1/calls answered ${placed.status}: ${placed.body?.detail ?? JSON.stringify(placed.body)}`);
    this.callId = placed.body.id;
    // A call answered before its dial finished carries no carrier id yet; Twilio drives it by the sid it created.
    this.sid = placed.body.carrier_call_id ?? (await this.dialledSid(to));
    if (!this.sid) return this.fail('POST /v1/calls answered 201 but the number was never dialled');
    for (const status of ['ringing', 'in-progress']) {
      const answered = await this.twilio.sendStatusCallback(this.sid, status);
      if (answered >= 300) return this.fail(`status callback ${status} answered ${answered}`);
    }
    try {
      this.stream = await this.twilio.connectMediaStream(this.sid);
    } catch (error) {
      return this.fail(`media stream refused: ${error.message}`);
    }
    void this.stream.closed.then(({ code, reason }) => {
      this.closedAt = performance.now();
      if (!this.hungUp) this.fail(`media stream closed by the platform (${code} ${reason})`.trim());
    });
    // Every server message as it arrives: a waiter whose predicate never matches sees each one (the fake's
    // public API has no message event); it is dropped when the socket closes.
    this.stream.waitFor((message) => this.onMessage(message, performance.now()), 2 ** 31 - 1).catch(() => undefined);
    this.state = 'greeting';
    this.stateAt = performance.now();
    this.nextAt = performance.now();
    this.tick();
  }

  /** The sid of the call the fake Twilio created for `to`, waited for up to 10 s. */
  async dialledSid(to) {
    for (let waited = 0; waited < 10_000; waited += 100) {
      const dial = this.twilio.calls.find((c) => c.action === 'create' && c.form.To === to && c.callSid);
      if (dial) return dial.callSid;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return undefined;
  }

  /** The caller hangs up: Twilio stops the stream and posts the `completed` status callback. */
  async hangUp() {
    this.hungUp = true;
    clearTimeout(this.timer);
    if (!this.stream || this.results.failures.has(this.index)) return;
    const answered = await this.twilio.sendStatusCallback(this.sid, 'completed').catch((error) => error.message);
    if (typeof answered !== 'number' || answered >= 300) this.fail(`status callback completed answered ${answered}`);
  }

  /** After the hang-up: the call must be recorded as ended by the caller. */
  async verifyEnded() {
    if (!this.callId || this.results.failures.has(this.index)) return;
    const read = await this.api('GET', `/v1/calls/${this.callId}`);
    if (read.status !== 200) return this.fail(`GET /v1/calls/{id} answered ${read.status}`);
    const { status, end_reason: reason } = read.body;
    if (status !== 'ended' || reason !== 'completed') this.fail(`recorded ${status}/${reason ?? '-'} instead of ended/completed`);
    if (this.heardNothing) this.fail('the agent never spoke (dead air)');
  }

  get heardNothing() {
    return this.lastMediaAt === 0;
  }

  // ---- the caller's side of the line: a frame every 20 ms, drift-corrected --------------------------------

  tick() {
    if (this.hungUp || !this.stream.open) return;
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
      this.speechLeft = BARGE_MS / 20;
      this.cleared = false;
      if (r.measuring) r.bargeIns++;
    } else if ((this.state === 'hearing' || this.state === 'greeting') && this.lastMediaAt > this.stateAt && quietFor >= AGENT_QUIET_MS && (this.lastPart?.last ?? true)) {
      // The agent finished its turn (its last sentence played, then quiet): think a moment, then ask.
      this.setState('thinking');
      this.speakAt = now + 200 + Math.random() * 500;
    } else if (this.state === 'thinking' && now >= this.speakAt) {
      this.setState('asking');
      this.speechLeft = QUESTION_MS / 20;
      // The next answer may be the interrupted one's words again (vendor-fakes.mjs ANSWERS alternate).
      this.interrupted = undefined;
    } else if ((this.state === 'awaiting' || this.state === 'greeting') && now - this.stateAt > ANSWER_TIMEOUT_MS) {
      if (r.measuring) r.unanswered++;
      this.setState('thinking');
      this.speakAt = now;
    }

    let frame;
    if (this.speechLeft > 0) {
      frame = this.sounds.speech[this.speechLeft % this.sounds.speech.length];
      if (--this.speechLeft === 0) this.endOfSpeech(now);
    } else {
      frame = this.sounds.noise[this.noiseAt++ % this.sounds.noise.length];
    }
    this.stream.sendAudio(frame).catch(() => undefined);
  }

  endOfSpeech(now) {
    this.lastSpeechAt = now;
    this.note(now, 'speech ends (last frame)');
    if (this.state === 'barging' && !this.cleared) {
      // Not cut yet: the recognizer's endpointing may still be running; the clear decides (see onMessage).
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

  onMessage(message, at) {
    const event = message.event;
    if (event === 'media') this.onMedia(this.speechOf?.(message.media.payload), at);
    else if (event === 'clear') this.onClear(at);
    this.trim();
    return false;
  }

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

  // The fake keeps every message and played segment for tests' assertions; a long run must not hold them all.
  trim() {
    const s = this.stream;
    if (s.received.length < 500) return;
    s.received.length = 0;
    s.marksEchoed.length = 0;
    s.receivedPayloads.length = 0;
    const now = performance.now();
    const live = s.segments.filter((segment) => segment.endAt > now);
    s.segments.length = 0;
    s.segments.push(...live);
  }
}
