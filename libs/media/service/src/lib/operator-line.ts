import { dtmfTone, Resampler, Ringback } from '@parley/audio';
import { FRAME_MS, realClock } from '@parley/voice-engine';
import type { Link, LinkEnd } from './call-links';

/**
 * The far end of the link is ahead of real time by more than this (a burst after the network stalled): its
 * audio is dropped rather than queued, so the conversation never drifts behind.
 */
export const MAX_LINE_LEAD_MS = 400;
/** Ringback kept queued on the stream thread, which paces it. */
const RING_LEAD_MS = 120;

/** How a line plays to its own socket. */
export interface LineSocket {
  /** Queues `pcm` (20 ms at the line's rate) to play; returns when it will (realClock's time). */
  play(pcm: Int16Array): number;
}

/**
 * Plays what arrives from the other end of a link on this end's socket: at this end's rate, one 20 ms frame at a
 * time, in arrival order, paced by the socket (the same playout as the engine's, without barge-in: nothing is ever
 * cleared). Audio arriving too far ahead is dropped.
 */
class LinePlayer {
  private readonly resamplers = new Map<number, Resampler>();
  private pending = new Int16Array(0);
  private playUntil = 0;
  private readonly frame: number;

  constructor(
    private readonly socket: LineSocket,
    private readonly rate: number,
    private readonly played?: (pcm: Int16Array, at: number) => void,
  ) {
    this.frame = (FRAME_MS * rate) / 1000;
  }

  /** How far ahead of now the queued audio reaches (ms). */
  get leadMs(): number {
    return Math.max(0, this.playUntil - realClock.now());
  }

  /** `pcm` at `rate`, resampled to this end's rate and played in 20 ms frames; dropped when too far ahead. */
  play(pcm: Int16Array, rate: number): void {
    let resampler = this.resamplers.get(rate);
    if (!resampler) this.resamplers.set(rate, (resampler = new Resampler(rate, this.rate)));
    const samples = resampler.process(pcm);
    if (this.leadMs > MAX_LINE_LEAD_MS) return;
    const joined = new Int16Array(this.pending.length + samples.length);
    joined.set(this.pending);
    joined.set(samples, this.pending.length);
    let at = 0;
    for (; at + this.frame <= joined.length; at += this.frame) this.out(joined.slice(at, at + this.frame));
    this.pending = joined.slice(at);
  }

  /** Samples already at this end's rate, as whole frames (a tone, ringback). */
  out(frame: Int16Array, record = true): void {
    const at = this.socket.play(frame);
    // A socket that plays at once (tests) still counts the queued time, so top-ups stay bounded.
    this.playUntil = Math.max(at, this.playUntil) + FRAME_MS;
    if (record) this.played?.(frame, at);
  }
}

export interface PhoneLineHooks {
  /** The operator's audio (and keys) as played to the caller, for the recording; ringback is not recorded. */
  played?(pcm: Int16Array, at: number): void;
  /** The operator is on the line now: the call's ring and join timers stop. */
  operatorJoined(): void;
  /** The operator left (hung up, their socket closed, or they transferred the call). */
  operatorLeft(reason: string): void;
}

/**
 * The phone side of a call a person answers (a `simple` agent's inbound call): the caller hears ringback until
 * the operator who claimed the call is on the link; then the caller's audio goes to the operator and the
 * operator's to the caller, and the operator's keypresses are played to the caller as tones (in band: every
 * carrier passes audio).
 */
export class PhoneLine implements LinkEnd {
  readonly role = 'phone';
  private link: Link | undefined;
  private readonly player: LinePlayer;
  private ringback: Ringback | undefined;
  private pump: NodeJS.Timeout | undefined;
  private operator = false;
  /** Until when a keypress tone plays: the operator's audio meanwhile is dropped, so the tone stays clean. */
  private toneUntil = 0;

  constructor(
    socket: LineSocket,
    private readonly rate: number,
    private readonly hooks: PhoneLineHooks,
  ) {
    this.player = new LinePlayer(socket, rate, hooks.played);
  }

  /** Starts the ringback and takes the link on which the operator will arrive. */
  ring(link: Link): void {
    this.link = link;
    if (this.operator) return;
    this.ringback = new Ringback(this.rate);
    this.topUp();
    this.pump = setInterval(() => this.topUp(), FRAME_MS * 2);
    this.pump.unref();
  }

  /** The operator is on the line. */
  get answered(): boolean {
    return this.operator;
  }

  /** The caller's audio, at the stream's rate: to the operator once they are there. */
  heard(pcm: Int16Array): void {
    if (this.operator) this.link?.audio(pcm, this.rate);
  }

  joined(role: string): void {
    if (role !== 'operator') return;
    this.operator = true;
    this.stopRinging();
    this.hooks.operatorJoined();
  }

  audio(pcm: Int16Array, rate: number): void {
    if (this.operator && realClock.now() >= this.toneUntil) this.player.play(pcm, rate);
  }

  dtmf(digit: string): void {
    const tone = dtmfTone(digit, this.rate);
    if (!tone || !this.operator) return;
    const frame = (FRAME_MS * this.rate) / 1000;
    for (let at = 0; at < tone.length; at += frame) {
      const chunk = new Int16Array(frame);
      chunk.set(tone.subarray(at, at + frame));
      this.player.out(chunk);
    }
    this.toneUntil = realClock.now() + this.player.leadMs;
  }

  signal(): void {
    // A phone has no peer connection to signal.
  }

  left(role: string, reason: string): void {
    if (role !== 'operator' || !this.operator) return;
    this.operator = false;
    this.hooks.operatorLeft(reason);
  }

  /** The phone stream finished: the operator is told `reason`. */
  stop(reason: string): void {
    this.stopRinging();
    this.link?.leave(reason);
  }

  private stopRinging(): void {
    clearInterval(this.pump);
    this.pump = undefined;
    this.ringback = undefined;
  }

  private topUp(): void {
    const ringback = this.ringback;
    while (ringback && this.player.leadMs < RING_LEAD_MS) this.player.out(ringback.next(), false);
  }
}

export interface OperatorLineHooks {
  /** The phone's end left (the caller hung up, the call was transferred or ended): the operator's socket ends. */
  phoneLeft(reason: string): void;
  /** The caller's audio as it arrives (its own rate), for the call's transcript. */
  callerAudio?(pcm: Int16Array, rate: number): void;
}

/**
 * The operator's side of a claimed call (their browser on the realtime socket): their microphone goes to the
 * phone's end of the link, wherever that runs, and the caller's audio comes back to play here.
 */
export class OperatorLine implements LinkEnd {
  readonly role = 'operator';
  private link: Link | undefined;
  private readonly player: LinePlayer;

  constructor(
    socket: LineSocket,
    private readonly rate: number,
    private readonly hooks: OperatorLineHooks,
  ) {
    this.player = new LinePlayer(socket, rate);
  }

  connect(link: Link): void {
    this.link = link;
  }

  /** The operator's microphone, at the socket's rate. */
  heard(pcm: Int16Array): void {
    this.link?.audio(pcm, this.rate);
  }

  /** A key the operator pressed, played to the caller. */
  press(digit: string): void {
    this.link?.dtmf(digit);
  }

  joined(): void {
    // The phone's end was there first (it rang); nothing to start.
  }

  audio(pcm: Int16Array, rate: number): void {
    this.player.play(pcm, rate);
    this.hooks.callerAudio?.(pcm, rate);
  }

  dtmf(): void {
    // The caller's keypresses are not passed to the operator.
  }

  signal(): void {
    // No peer connection on a phone call.
  }

  left(role: string, reason: string): void {
    if (role === 'phone') this.hooks.phoneLeft(reason);
  }

  stop(reason: string): void {
    this.link?.leave(reason);
  }
}
