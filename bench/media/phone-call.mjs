// A simulated caller on a phone line, as Twilio produces it, in two halves: the call's control (PhoneCall, in the
// load generator's main thread: the call is placed through the platform's API, the fake Twilio REST server answers
// it with status callbacks and, at the end, `completed`) and its media stream (PhoneLine, a SimulatedCaller, in one
// of the caller threads (caller-threads.mjs): Twilio's Media Streams WebSocket, μ-law at 8 kHz, base64 JSON, marks
// echoed when played, `clear` honoured). A carrier's media edge is many machines: the caller threads spread the
// streams so that no caller's reading waits behind a hundred others' in one event loop.
import { performance } from 'node:perf_hooks';
import { callerSounds, SimulatedCaller } from './caller.mjs';
import { ThreadedCall } from './caller-threads.mjs';

export const PHONE_RATE = 8000;

/** The caller's sounds as μ-law frames, as the fake Twilio sends them (`libs`: the compiled libraries, build.mjs). */
export const phoneSounds = (libs) => callerSounds(PHONE_RATE, (pcm) => libs.audio.pcm16ToMulaw(pcm), libs.speech);

export class PhoneCall extends ThreadedCall {
  /**
   * `twilio`: the fake Twilio server; `line`: this call's media stream in its caller thread (ThreadedCall);
   * `parseTwiml`: parseConnectStreamTwiml of the compiled carrier library.
   */
  constructor({ twilio, parseTwiml, ...call }) {
    super(call);
    Object.assign(this, { twilio, parseTwiml });
  }

  /** Places the call through the API, answers it at the carrier and has the caller thread open its media stream. */
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
    // What Twilio's <Connect><Stream> runs on answer: the URL and parameters of the TwiML the platform gave.
    const twiml = this.twilio.callResources.get(this.sid)?.twiml;
    const stream = twiml !== undefined ? this.parseTwiml(twiml) : undefined;
    if (!stream) return this.fail(`the call's TwiML has no <Connect><Stream url>: ${twiml ?? '(none)'}`);
    const { accountSid, authToken } = this.twilio;
    const refused = await this.line.open({ url: stream.url, parameters: stream.parameters, accountSid, authToken, callSid: this.sid }, this.callId);
    if (refused) this.fail(`media stream refused: ${refused}`);
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

  /** The caller stops talking; Twilio posts the `completed` status callback, then stops the stream. */
  async hangUp() {
    if (!(await this.line.hangUp())) return;
    const answered = await this.twilio.sendStatusCallback(this.sid, 'completed').catch((error) => error.message);
    if (typeof answered !== 'number' || answered >= 300) this.fail(`status callback completed answered ${answered}`);
    await this.line.stop();
  }
}

/** The media stream of a PhoneCall, in a caller thread: the caller's voice and ear on Twilio's Media Streams. */
export class PhoneLine extends SimulatedCaller {
  /** `connect(init)`: FakeMediaStream.connect; `audio`: the compiled @parley/audio (μ-law). */
  constructor({ connect, audio, ...caller }) {
    super(caller);
    this.connect = connect;
    this.audio = audio;
  }

  get open() {
    return this.stream?.open ?? false;
  }

  /** Opens the stream `init` names (FakeMediaStreamInit) and starts talking; resolves to a refusal's reason or undefined. */
  async start(init, onClosed) {
    try {
      this.stream = await this.connect(init);
    } catch (error) {
      return error.message;
    }
    void this.stream.closed.then(({ code, reason }) => {
      this.lineClosed('media stream', code, reason);
      onClosed();
    });
    // Every server message as it arrives: a waiter whose predicate never matches sees each one (the fake's
    // public API has no message event); it is dropped when the socket closes.
    this.stream.waitFor((message) => this.onMessage(message, performance.now()), 2 ** 31 - 1).catch(() => undefined);
    this.begin();
    return undefined;
  }

  /** The caller is silent now; the stream ends when Twilio stops it (stop(), after the status callback). */
  leave() {
    return Promise.resolve();
  }

  stop() {
    return this.stream?.stop();
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
