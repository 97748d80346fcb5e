import type { IceServer, PeerIO } from './peer';

/** The part of a WebSocket the client uses (the browser's, or a fake in tests). */
export interface SocketLike {
  readonly readyState: number;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/** What the audio layer tells the call. */
export interface AudioHandlers {
  /** A chunk of the microphone at `sampleRate`, mono, -1…1. */
  capture(samples: Float32Array): void;
  /** Samples handed to `play` that have been played or dropped, in total since the audio opened. */
  consumed(total: number): void;
}

/** The microphone and the speakers, opened for one call. */
export interface AudioIO {
  /** The device's rate (both ways). */
  readonly sampleRate: number;
  /** Queue samples (at `sampleRate`) behind what is playing. */
  play(samples: Float32Array): void;
  /** Drop everything not yet played. */
  clear(): void;
  /** Release the microphone and the speakers. */
  close(): void;
}

/** Everything the call needs from the browser, so its logic runs (and is tested) without one. */
export interface CallEnvironment {
  /** `window.isSecureContext`: browsers give no microphone to a page served over plain http (but localhost). */
  readonly secureContext: boolean;
  createSocket(url: string): SocketLike;
  /** Asks for the microphone and opens playback; rejects with a ParleyError (or getUserMedia's DOMException). */
  openAudio(handlers: AudioHandlers): Promise<AudioIO>;
  /**
   * A rendezvous seat: asks for the microphone and puts it on a peer connection that plays the other seat's audio;
   * rejects as `openAudio` does. Absent: this environment has no peer connections.
   */
  openPeer?(options: { iceServers: IceServer[] }): Promise<PeerIO>;
}

export const SOCKET_OPEN = 1;
