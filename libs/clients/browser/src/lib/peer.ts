/** An ICE server for the peer connection (RTCIceServer): STUN to learn a public address, TURN to relay. */
export interface IceServer {
  urls: string | string[];
  username?: string;
  credential?: string;
}

/** A session description as it travels in a `signal`. */
export interface Description {
  type: 'offer' | 'answer' | 'pranswer' | 'rollback';
  sdp?: string;
}

/** The part of RTCPeerConnection the signalling uses (the browser's, or a fake in tests). */
export interface PeerConnectionLike {
  onicecandidate: ((event: { candidate: { toJSON(): unknown } | null }) => void) | null;
  readonly localDescription: Description | null;
  createOffer(): Promise<Description>;
  createAnswer(): Promise<Description>;
  setLocalDescription(description: Description): Promise<void>;
  setRemoteDescription(description: Description): Promise<void>;
  addIceCandidate(candidate?: unknown): Promise<void>;
}

/** A rendezvous seat's media: the microphone on a peer connection, the other seat's audio played when it comes. */
export interface PeerIO {
  readonly connection: PeerConnectionLike;
  /** The device's rate, of the copy's samples. */
  readonly sampleRate: number;
  /**
   * Also hands the microphone to `capture` (mono, -1…1, at `sampleRate`), for the copy the worker asked for to
   * record or transcribe the call (`call-start` `copy`).
   */
  copy(capture: (samples: Float32Array) => void): Promise<void>;
  /** Silences the microphone on the peer connection (the other seat hears nothing) or gives it back. */
  mute(muted: boolean): void;
  /** RMS levels (0 silence to 1 full scale) of the microphone and of the other seat's audio, as of now. */
  levels(): { microphone: number; remote: number };
  /** Releases the microphone, the connection and the speakers. */
  close(): void;
}

/**
 * The peer connection's negotiation over the realtime socket's `signal` messages: an SDP `{ sdp }` or an ICE
 * candidate `{ candidate }` (null: the end of candidates). The seat told to offer (the second to join) offers; the
 * other answers. Messages are handled one at a time in the order received, and candidates that arrive before the
 * remote description are held until it is set.
 */
export class PeerSignalling {
  private queue: Promise<void> = Promise.resolve();
  private remoteSet = false;
  private readonly early: unknown[] = [];

  constructor(
    private readonly connection: PeerConnectionLike,
    private readonly send: (data: Record<string, unknown>) => void,
    private readonly failed: (error: unknown) => void,
  ) {
    connection.onicecandidate = (event) => send({ candidate: event.candidate ? event.candidate.toJSON() : null });
  }

  /** The other seat is here: the seat told to offer makes the offer. */
  peerJoined(offer: boolean): void {
    if (offer) this.then(async () => this.describe(await this.connection.createOffer()));
  }

  /** A `signal` from the other seat. */
  receive(data: Record<string, unknown>): void {
    this.then(async () => {
      if (data['sdp'] && typeof data['sdp'] === 'object') {
        const description = data['sdp'] as Description;
        await this.connection.setRemoteDescription(description);
        this.remoteSet = true;
        if (description.type === 'offer') await this.describe(await this.connection.createAnswer());
        for (const candidate of this.early.splice(0)) await this.addCandidate(candidate);
      } else if ('candidate' in data) {
        if (this.remoteSet) await this.addCandidate(data['candidate']);
        else this.early.push(data['candidate']);
      }
    });
  }

  private async describe(description: Description): Promise<void> {
    await this.connection.setLocalDescription(description);
    const local = this.connection.localDescription ?? description;
    this.send({ sdp: { type: local.type, sdp: local.sdp } });
  }

  /** null marks the end of the other seat's candidates. */
  private addCandidate(candidate: unknown): Promise<void> {
    return candidate ? this.connection.addIceCandidate(candidate) : this.connection.addIceCandidate();
  }

  private then(step: () => Promise<void>): void {
    this.queue = this.queue.then(step).catch((error: unknown) => this.failed(error));
  }
}
