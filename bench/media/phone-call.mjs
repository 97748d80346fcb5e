// A simulated caller on a phone line, as Twilio produces it: the call is placed through the platform's API, the fake
// Twilio answers it (status callbacks) and opens the Media Streams WebSocket (μ-law at 8 kHz, base64 JSON, marks
// echoed when played, `clear` honoured); hanging up is Twilio's `completed` status callback.
import { performance } from 'node:perf_hooks';
import { callerSounds, SimulatedCaller } from './caller.mjs';

export const PHONE_RATE = 8000;

/** The caller's sounds as μ-law frames, as the fake Twilio sends them (`libs`: the compiled libraries, build.mjs). */
export const phoneSounds = (libs) => callerSounds(PHONE_RATE, (pcm) => libs.audio.pcm16ToMulaw(pcm), libs.speech);

export class PhoneCall extends SimulatedCaller {
  /** `twilio`: the fake Twilio server; `audio`: the compiled @parley/audio (μ-law). */
  constructor({ twilio, audio, ...caller }) {
    super(caller);
    this.twilio = twilio;
    this.audio = audio;
  }

  get open() {
    return this.stream?.open ?? false;
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
    void this.stream.closed.then(({ code, reason }) => this.lineClosed('media stream', code, reason));
    // Every server message as it arrives: a waiter whose predicate never matches sees each one (the fake's
    // public API has no message event); it is dropped when the socket closes.
    this.stream.waitFor((message) => this.onMessage(message, performance.now()), 2 ** 31 - 1).catch(() => undefined);
    this.begin();
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

  /** Twilio stops the stream and posts the `completed` status callback. */
  async leave() {
    const answered = await this.twilio.sendStatusCallback(this.sid, 'completed').catch((error) => error.message);
    if (typeof answered !== 'number' || answered >= 300) this.fail(`status callback completed answered ${answered}`);
  }

  send(frame) {
    this.stream.sendAudio(frame).catch(() => undefined);
  }

  onMessage(message, at) {
    const event = message.event;
    if (event === 'media') this.onMedia(this.speechOf?.(this.audio.mulawToPcm16(Buffer.from(message.media.payload, 'base64'))), at);
    else if (event === 'clear') this.onClear(at);
    this.trim();
    return false;
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
