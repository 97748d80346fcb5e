import {
  REALTIME_CLOSE,
  REALTIME_FRAME_MS,
  REALTIME_PROTOCOL_VERSION,
  REALTIME_SAMPLE_RATE,
  RealtimeClientMessage,
  RealtimeServerMessage,
} from '@parley/contracts/realtime';
import { version } from '../version.json';
import { browserEnvironment } from './browser';
import { Emitter } from './emitter';
import { AudioIO, CallEnvironment, SOCKET_OPEN, SocketLike } from './environment';
import { closeError, microphoneError, ParleyError } from './errors';
import { FrameEncoder } from './frames';
import { decodePcm16, encodePcm16, rms } from './pcm';
import { IceServer, PeerIO, PeerSignalling } from './peer';
import { PlaybackTracker } from './playback';
import { Resampler } from './resampler';

export const VERSION: string = version;
/** How long `start()` waits for `call-start` once the socket is open. */
export const CONNECT_TIMEOUT_MS = 15_000;
/** How often `volume` fires during a call. */
export const VOLUME_INTERVAL_MS = 100;
/** Longest the agent's last words may keep playing after the call ended on the worker's side. */
export const DRAIN_AFTER_END_MS = 5_000;

const DTMF = /^[0-9*#A-D]+$/;

export interface ParleyCallOptions {
  /** The socket URL minted with the token (`url` of `POST /v1/realtime/tokens`); used as given. */
  url: string;
  /** A realtime token (`rtk_…`), minted by your server. Never an API key. */
  token: string;
  /** The call the token is for, when known: a token for another call is then refused (`token_forbidden`). */
  callId?: string;
  /**
   * A rendezvous seat's ICE servers (STUN, TURN) for the peer connection to the other seat. Default none: the two
   * browsers reach each other only on the same host or LAN; across the internet give STUN, and TURN for networks
   * that block direct paths.
   */
  iceServers?: IceServer[];
}

export type CallStartEvent = Omit<Extract<RealtimeServerMessage, { type: 'call-start' }>, 'type'>;
export type TranscriptEvent = Omit<Extract<RealtimeServerMessage, { type: 'transcript' }>, 'type'>;
export interface CallEndEvent {
  /** The worker's end reason (`completed`, `no_answer`…), or the client's error code when it ended on one. */
  reason: string;
}
export interface ErrorEvent {
  code: string;
  message: string;
}
export interface VolumeEvent {
  /** Level of the microphone (before mute) over the last interval: RMS, 0 silence to 1 full scale. */
  microphone: number;
  /** Level of the agent's audio played over the last interval (0 in a rendezvous). */
  agent: number;
  /** Level of the far end as played: the agent's audio, or in a rendezvous the other seat's (sampled at the tick). */
  remote: number;
}
/** A rendezvous: the other seat joined or left. */
export interface PeerEvent {
  state: 'joined' | 'left';
  seat: string;
}

export interface ParleyCallEvents {
  'call-start': CallStartEvent;
  'call-end': CallEndEvent;
  /** The agent's audio started playing. */
  'speech-start': void;
  /** The agent's audio stopped (played out, or cut off by the caller). */
  'speech-end': void;
  transcript: TranscriptEvent;
  volume: VolumeEvent;
  error: ErrorEvent;
  peer: PeerEvent;
}

type Phase = 'idle' | 'starting' | 'connected' | 'ended';

/**
 * One browser call on the realtime socket (the environment, socket and audio, is the browser's unless a test gives
 * another). Constructing one does nothing; `start()` asks for the microphone, opens
 * the socket, sends `start` and resolves on `call-start`. `call-end` fires exactly once for every call started,
 * however it ended (hung up, ended by the agent, refused at connect, microphone denied).
 */
export class ParleyCall extends Emitter<ParleyCallEvents> {
  private phase: Phase = 'idle';
  private starting?: Promise<void>;
  private socket?: SocketLike;
  private audio?: AudioIO;
  private encoder?: FrameEncoder;
  private speaker?: Resampler;
  private readonly playback: PlaybackTracker;
  private muted = false;
  private seq = 0;
  /** A frame of silence at the call's rate, sent in place of the microphone while muted. */
  private silence = '';
  private serverReason?: string;
  private micSquares = 0;
  private micSamples = 0;
  private volumeTimer?: ReturnType<typeof setInterval>;
  private connected?: { resolve(): void; reject(error: ParleyError): void };
  /** A rendezvous seat (the token's role): audio runs on a peer connection, the socket only signals. */
  private readonly seat: boolean;
  private peer?: PeerIO;
  private signalling?: PeerSignalling;

  constructor(
    private readonly options: ParleyCallOptions,
    private readonly environment: CallEnvironment = browserEnvironment,
  ) {
    super();
    if (typeof options?.url !== 'string' || !/^wss?:\/\//i.test(options.url)) throw new TypeError('ParleyCall: `url` must be the ws:// or wss:// URL minted with the token.');
    if (typeof options.token !== 'string' || options.token === '') throw new TypeError('ParleyCall: `token` is required (mint one on your server).');
    this.seat = tokenRole(options.token) === 'seat';
    this.playback = new PlaybackTracker({
      echo: (name) => this.send({ type: 'mark', name }),
      speech: (speaking) => this.emit(speaking ? 'speech-start' : 'speech-end', undefined),
    });
  }

  private get ended(): boolean {
    return this.phase === 'ended';
  }

  /** True between `call-start` and `call-end`. */
  get active(): boolean {
    return this.phase === 'connected';
  }

  get isMuted(): boolean {
    return this.muted;
  }

  /**
   * Starts the call. Calling it again returns the same promise (one call per client); after the call ended it
   * rejects with `call_ended`. Rejects with a ParleyError whose code says why the call did not start.
   */
  start(): Promise<void> {
    if (!this.starting) this.starting = this.phase === 'ended' ? Promise.reject(new ParleyError('call_ended', 'This call has ended; create a new ParleyCall.')) : this.run();
    return this.starting;
  }

  /**
   * Muting sends silence in place of the microphone, so the call's recording and timeline stay whole; a rendezvous
   * seat's peer connection sends silence too.
   */
  mute(muted: boolean = true): void {
    this.muted = muted;
    this.peer?.mute(muted);
  }

  /** Sends keypresses, one `dtmf` message each; throws (sending nothing) on anything but 0-9, *, #, A-D. */
  sendDigits(digits: string): void {
    const normalized = String(digits).toUpperCase();
    if (!DTMF.test(normalized)) throw new ParleyError('invalid_digits', `sendDigits takes 0-9, *, # and A-D; got ${JSON.stringify(digits)}.`);
    if (this.phase !== 'connected') throw new ParleyError('not_in_call', 'sendDigits needs a call in progress (after call-start).');
    for (const digit of normalized) this.send({ type: 'dtmf', digit });
  }

  /**
   * An operator puts the phone call they claimed through to `destination` (E.164 or a sip: URI). The call then
   * ends here with `call-end` `transferred`; a transfer that could not be placed is an `error` `transfer_failed`,
   * and the call goes on.
   */
  transfer(destination: string): void {
    const to = String(destination).trim();
    if (!/^(\+[1-9]\d{6,14}|sips?:\S+)$/.test(to)) throw new ParleyError('invalid_destination', `transfer takes an E.164 number or a sip: URI; got ${JSON.stringify(destination)}.`);
    if (this.phase !== 'connected') throw new ParleyError('not_in_call', 'transfer needs a call in progress (after call-start).');
    this.send({ type: 'transfer', destination: to });
  }

  /** Hangs up (the call ends `completed`; before `call-start`, `canceled`). Calling it again does nothing. */
  hangup(): void {
    if (this.phase === 'ended') return;
    const answered = this.phase === 'connected';
    if (answered) this.send({ type: 'hangup' });
    this.end(answered ? 'completed' : 'canceled');
  }

  private async run(): Promise<void> {
    this.phase = 'starting';
    try {
      if (!this.environment.secureContext) {
        throw new ParleyError(
          'insecure_context',
          'Browsers give no microphone to pages served over plain http: serve this page over https (or from localhost).',
        );
      }
      const media = await (this.seat ? this.openPeer() : this.environment.openAudio({ capture: (samples) => this.capture(samples), consumed: (total) => this.consumed(total) })).catch(
        (error: unknown) => Promise.reject(error instanceof ParleyError ? error : microphoneError(error)),
      );
      if (this.ended) {
        media.close();
        throw new ParleyError('call_ended', 'The call was hung up before it started.');
      }
      if ('connection' in media) this.peer = media;
      else this.audio = media;
      await this.connect();
    } catch (error) {
      const failure =
        error instanceof ParleyError ? error : new ParleyError('connection_lost', `Could not connect: ${(error as Error)?.message ?? error}`);
      this.end(failure.code, failure);
      throw failure;
    }
  }

  private openPeer(): Promise<PeerIO> {
    if (!this.environment.openPeer) return Promise.reject(new ParleyError('unsupported_browser', 'This browser has no RTCPeerConnection: a rendezvous needs one.'));
    return this.environment.openPeer({ iceServers: this.options.iceServers ?? [] });
  }

  private connect(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new ParleyError('timeout', `No answer from the media worker within ${CONNECT_TIMEOUT_MS / 1000} s.`)), CONNECT_TIMEOUT_MS);
      this.connected = {
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      let socket: SocketLike;
      try {
        socket = this.environment.createSocket(this.options.url);
      } catch (error) {
        return this.fail(new ParleyError('connection_lost', `Could not open ${this.options.url}: ${(error as Error)?.message ?? error}`));
      }
      this.socket = socket;
      socket.onopen = () =>
        this.send({
          type: 'start',
          token: this.options.token,
          version: REALTIME_PROTOCOL_VERSION,
          ...(this.options.callId ? { call_id: this.options.callId } : {}),
          client: `parley-browser/${VERSION}`,
        });
      socket.onmessage = (event) => this.receive(event.data);
      socket.onclose = (event) => this.closed(event.code, event.reason);
      // A failed socket also closes (1006), which carries the reason: nothing to do on the error itself.
      socket.onerror = () => undefined;
    });
  }

  private receive(data: unknown): void {
    if (typeof data !== 'string') return;
    let message: RealtimeServerMessage;
    try {
      message = JSON.parse(data) as RealtimeServerMessage;
    } catch {
      return;
    }
    switch (message.type) {
      case 'call-start':
        return this.callStarted(message);
      case 'audio':
        return this.agentAudio(message.audio);
      case 'mark':
        return this.playback.mark(message.name);
      case 'clear':
        this.audio?.clear();
        this.speaker?.reset();
        return this.playback.clear();
      case 'transcript': {
        const { type: _type, ...turn } = message;
        return this.emit('transcript', turn);
      }
      case 'call-end':
        this.serverReason = message.reason;
        return;
      case 'error':
        return this.emit('error', { code: message.code, message: message.message });
      case 'peer':
        if (message.state === 'joined') this.signalling?.peerJoined(message.offer === true);
        return this.emit('peer', { state: message.state, seat: message.seat });
      case 'signal':
        return this.signalling?.receive(message.data);
    }
  }

  private callStarted(message: Extract<RealtimeServerMessage, { type: 'call-start' }>): void {
    if (this.phase !== 'starting') return;
    const peer = this.peer;
    if (peer) {
      this.signalling = new PeerSignalling(
        peer.connection,
        (data) => this.send({ type: 'signal', data }),
        (error) => this.emit('error', { code: 'peer_failed', message: `The peer connection could not be negotiated: ${(error as Error)?.message ?? error}` }),
      );
      // The worker records or transcribes the call: the microphone also goes on the socket, as on a web call.
      if (message.copy) {
        this.encodeFrames(peer.sampleRate, message);
        peer.copy((samples) => this.capture(samples)).catch((error: unknown) =>
          this.emit('error', { code: 'copy_failed', message: `The copy of the microphone could not be sent: ${(error as Error)?.message ?? error}` }),
        );
      }
      return this.started(message);
    }
    if (!this.audio) return;
    this.encodeFrames(this.audio.sampleRate, message);
    this.speaker = new Resampler(message.sample_rate || REALTIME_SAMPLE_RATE, this.audio.sampleRate);
    this.started(message);
  }

  /** Cuts the microphone (at `deviceRate`) into the call's frames. */
  private encodeFrames(deviceRate: number, message: Extract<RealtimeServerMessage, { type: 'call-start' }>): void {
    this.encoder = new FrameEncoder(deviceRate, message.sample_rate || REALTIME_SAMPLE_RATE, message.frame_ms || REALTIME_FRAME_MS);
    this.silence = encodePcm16(new Float32Array(this.encoder.frameSamples));
  }

  private started(message: Extract<RealtimeServerMessage, { type: 'call-start' }>): void {
    this.phase = 'connected';
    this.volumeTimer = setInterval(() => this.volumeTick(), VOLUME_INTERVAL_MS);
    this.connected?.resolve();
    const { type: _type, ...start } = message;
    this.emit('call-start', start);
  }

  private capture(samples: Float32Array): void {
    if (this.phase !== 'connected' || !this.encoder) return;
    for (const s of samples) this.micSquares += s * s;
    this.micSamples += samples.length;
    for (const frame of this.encoder.push(samples)) {
      this.send({ type: 'audio', seq: this.seq++, audio: this.muted ? this.silence : encodePcm16(frame) });
    }
  }

  private agentAudio(base64: string): void {
    if (this.phase !== 'connected' || !this.audio || !this.speaker) return;
    const pcm = decodePcm16(base64);
    const samples = this.speaker.process(pcm);
    this.playback.enqueue(samples.length, rms(pcm));
    if (samples.length) this.audio.play(samples);
  }

  private consumed(total: number): void {
    this.playback.played(total, Date.now());
  }

  private volumeTick(): void {
    if (this.peer) {
      const { microphone, remote } = this.peer.levels();
      return this.emit('volume', { microphone, agent: 0, remote });
    }
    this.playback.tick(Date.now());
    const microphone = this.micSamples ? Math.sqrt(this.micSquares / this.micSamples) : 0;
    this.micSquares = 0;
    this.micSamples = 0;
    const agent = this.playback.takeLevel();
    this.emit('volume', { microphone, agent, remote: agent });
  }

  private closed(code: number, reason: string): void {
    const error = closeError(code, reason);
    if (this.phase === 'starting') return this.fail(error ?? new ParleyError('connection_lost', 'The media worker closed the socket before the call started.'));
    if (error) return this.fail(error);
    // Ended by the worker: the agent's last words may still be playing.
    this.end(this.serverReason ?? 'completed', undefined, true);
  }

  /** Ends on an error: before `call-start` the pending start() rejects with it (and run() ends the call). */
  private fail(error: ParleyError): void {
    if (this.phase === 'starting' && this.connected) this.connected.reject(error);
    else this.end(error.code, error);
  }

  private end(reason: string, error?: ParleyError, drain = false): void {
    if (this.phase === 'ended') return;
    const wasStarting = this.phase === 'starting';
    this.phase = 'ended';
    clearInterval(this.volumeTimer);
    const socket = this.socket;
    if (socket) {
      socket.onopen = socket.onmessage = socket.onclose = socket.onerror = null;
      if (socket.readyState <= SOCKET_OPEN) socket.close(REALTIME_CLOSE.normal, reason);
    }
    this.peer?.close();
    const audio = this.audio;
    const leftMs = audio && drain ? (this.playback.pending / audio.sampleRate) * 1000 : 0;
    if (audio && leftMs > 0) setTimeout(() => audio.close(), Math.min(leftMs + 250, DRAIN_AFTER_END_MS));
    else audio?.close();
    this.playback.clear();
    // A hangup before call-start: the pending start() learns it from here.
    if (wasStarting) this.connected?.reject(new ParleyError('call_ended', 'The call was hung up before it started.'));
    if (error) this.emit('error', { code: error.code, message: error.message });
    this.emit('call-end', { reason });
  }

  private send(message: RealtimeClientMessage): void {
    if (this.socket?.readyState === SOCKET_OPEN) this.socket.send(JSON.stringify(message));
  }
}

/** The role in a realtime token's claims (readable by anyone: `rtk_` + base64url JSON + `.` + MAC); '' when unreadable. */
function tokenRole(token: string): string {
  try {
    const body = token.slice(4).split('.')[0].replace(/-/g, '+').replace(/_/g, '/');
    const claims = JSON.parse(atob(body + '='.repeat((4 - (body.length % 4)) % 4))) as { role?: unknown };
    return typeof claims.role === 'string' ? claims.role : '';
  } catch {
    return '';
  }
}
