// A simulated caller in a browser, as the embed client behaves on the realtime socket (libs/contracts/src/realtime.ts):
// a token is minted with POST /v1/realtime/tokens (as a customer's server does for its page: BrowserCall, in the
// load generator's main thread), the browser (BrowserLine, in a caller thread) opens the socket the token names, sends `start` and, once `call-start` arrives, streams its microphone: inline PCM16 LE at
// 16 kHz mono, one 20 ms frame every 20 ms numbered by `seq`. It plays the agent's frames in real time, so a mark is
// echoed once what came before it has played and `clear` drops what has not (pending marks echoed at once).
// Hanging up is `{"type":"hangup"}`: the platform answers `call-end` (completed) and closes the socket (1000).
import { performance } from 'node:perf_hooks';
import { WebSocket } from 'ws';
import { hasEnergy } from './agent-speech.mjs';
import { callerSounds, SimulatedCaller } from './caller.mjs';
import { ThreadedCall } from './caller-threads.mjs';

/** REALTIME_SAMPLE_RATE: inline audio both ways. */
export const BROWSER_RATE = 16_000;
export const TRANSPORT = 'inline PCM16 16 kHz over the realtime WebSocket';
const FRAME_MS = 20;
const CALL_START_TIMEOUT_MS = 10_000;
const HANG_UP_TIMEOUT_MS = 5_000;

/** The caller's sounds as the realtime socket carries them: base64 PCM16 LE frames (`libs`: build.mjs). */
export const browserSounds = (libs) => callerSounds(BROWSER_RATE, (pcm) => Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64'), libs.speech);

/**
 * A browser call's `results.connect`: its connect times (ms) go there, every call's, measured window or not (calls
 * connect while they ramp up, each beside those already talking): `total` token request sent → first agent frame
 * with energy received, split into `mint` (→ the token's 201), `join` (→ `call-start` on the socket) and
 * `greeting` (→ that frame).
 */
export const newConnectTimes = () => ({ total: [], mint: [], join: [], greeting: [] });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A received frame's samples; copied, as a small base64 decode may sit at an odd offset of Node's buffer pool. */
function pcmOf(audio) {
  const bytes = Buffer.from(audio, 'base64');
  return new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
}

/**
 * A browser call's control, in the load generator's main thread: the token is minted there, as a customer's server
 * mints it for its page; the socket, the talking and the listening run in a caller thread (BrowserLine).
 */
export class BrowserCall extends ThreadedCall {

  /** Mints the token, then has the caller thread open the socket and join the call. */
  async start() {
    // Times cross to the caller thread as wall-clock ms: each thread has its own performance clock.
    const now = () => performance.timeOrigin + performance.now();
    const askedAt = now();
    const minted = await this.api('POST', '/v1/realtime/tokens', { agent_id: this.agentId });
    if (minted.status !== 201) return this.fail(`POST /v1/realtime/tokens answered ${minted.status}: ${minted.body?.detail ?? JSON.stringify(minted.body)}`);
    this.callId = minted.body.call_id;
    const refused = await this.line.open({ url: minted.body.url, token: minted.body.token, callId: this.callId, askedAt, mintedAt: now() }, this.callId);
    if (refused) this.fail(refused);
  }

  /** The caller hangs up on the socket (BrowserLine.leave). */
  async hangUp() {
    await this.line.hangUp();
  }
}

/** A browser call's socket, in a caller thread: the caller's microphone and ear on the realtime socket. */
export class BrowserLine extends SimulatedCaller {
  constructor(caller) {
    super(caller);
    this.playEnd = 0;
    this.pendingMarks = [];
  }

  get open() {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /**
   * Opens the socket the token names and joins the call (`init`: url, token, callId, and askedAt / mintedAt, the
   * main thread's wall-clock ms); the caller talks once `call-start` has arrived. Resolves to a refusal's reason or
   * undefined.
   */
  async start({ url, token, callId, askedAt, mintedAt }, onClosed) {
    this.askedAt = askedAt - performance.timeOrigin;
    this.mintedAt = mintedAt - performance.timeOrigin;
    this.callId = callId;
    this.ws = new WebSocket(url);
    // A refusal at connect closes the socket with its code and reason: the close says what happened.
    this.ws.on('error', () => undefined);
    this.closed = new Promise((resolve) => this.ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    void this.closed.then(({ code, reason }) => {
      this.lineClosed('realtime socket', code, reason);
      onClosed();
    });
    const started = new Promise((resolve) => (this.started = resolve));
    this.ws.on('message', (data) => this.onMessage(JSON.parse(String(data)), performance.now()));
    this.ws.once('open', () => this.ws.send(JSON.stringify({ type: 'start', token, version: 1, call_id: callId, client: 'bench-browser' })));
    const joined = await Promise.race([started, this.closed.then(() => false), sleep(CALL_START_TIMEOUT_MS).then(() => false)]);
    if (!joined) return `no call-start within ${CALL_START_TIMEOUT_MS / 1000} s`;
    this.micAt = performance.now();
    this.begin();
    return undefined;
  }

  stop() {
    this.ws?.terminate();
  }

  /** `{"type":"hangup"}`: the call must end `completed`, the socket close normally. */
  async leave() {
    this.ws.send(JSON.stringify({ type: 'hangup' }));
    const closed = await Promise.race([this.closed, sleep(HANG_UP_TIMEOUT_MS)]);
    if (!closed) return this.fail(`the realtime socket was still open ${HANG_UP_TIMEOUT_MS / 1000} s after the hang-up`);
    if (closed.code !== 1000 || this.endReason !== 'completed') this.fail(`hung up: call-end ${this.endReason ?? '(none)'}, socket closed ${closed.code} ${closed.reason}`.trim());
  }

  /** A microphone frame; `seq` counts 20 ms from the first, so frames a stall lost leave a gap (silence). */
  send(frame, at) {
    this.ws.send(JSON.stringify({ type: 'audio', seq: Math.max(0, Math.round((at - this.micAt) / FRAME_MS)), audio: frame }));
  }

  onMessage(message, at) {
    switch (message.type) {
      case 'audio':
        return this.onAudio(message.audio, at);
      case 'mark':
        this.pendingMarks.push({ name: message.name, dueAt: Math.max(at, this.playEnd) });
        return this.flushMarks();
      case 'clear':
        this.playEnd = at;
        clearTimeout(this.markTimer);
        for (const mark of this.pendingMarks.splice(0)) this.echoMark(mark.name);
        return this.onClear(at);
      case 'call-start':
        this.callStartAt = at;
        return this.started(true);
      case 'call-end':
        this.endReason = message.reason;
    }
  }

  onAudio(audio, at) {
    this.playEnd = Math.max(at, this.playEnd) + FRAME_MS;
    const pcm = this.speechOf || this.heardAt === undefined ? pcmOf(audio) : undefined;
    if (this.heardAt === undefined && hasEnergy(pcm)) {
      this.heardAt = at;
      const c = this.results.connect;
      c.total.push(at - this.askedAt);
      c.mint.push(this.mintedAt - this.askedAt);
      c.join.push(this.callStartAt - this.mintedAt);
      c.greeting.push(at - this.callStartAt);
    }
    this.onMedia(this.speechOf?.(pcm), at);
  }

  // One timer for the head mark keeps echoes in order.
  flushMarks() {
    clearTimeout(this.markTimer);
    const now = performance.now();
    while (this.pendingMarks.length && this.pendingMarks[0].dueAt <= now) this.echoMark(this.pendingMarks.shift().name);
    const head = this.pendingMarks[0];
    if (head) this.markTimer = setTimeout(() => this.flushMarks(), Math.max(1, Math.ceil(head.dueAt - now)));
  }

  echoMark(name) {
    if (this.open) this.ws.send(JSON.stringify({ type: 'mark', name }));
  }
}
