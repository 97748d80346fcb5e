/**
 * A carrier's real-time audio stream (Twilio Media Streams, Telnyx media streaming, Vonage WebSockets) in
 * carrier-neutral terms. The media worker speaks only this; each carrier's wire format lives in its adapter.
 */

/** What the carrier said on the stream, parsed. */
export type MediaStreamEvent =
  | { type: 'connected' }
  | {
      type: 'start';
      /** The carrier's id of this stream (Twilio: `MZ…`), needed on every outbound message. */
      streamId: string;
      /** The carrier's id of the call (Twilio: `CA…`). */
      carrierCallId: string;
      /** Parameters given in the markup that opened the stream (Parley puts the stream `token` there). */
      parameters: Record<string, string>;
      /** Audio format of `audio` events both ways. */
      format: MediaFormat;
    }
  | {
      type: 'audio';
      /** Encoded audio (see the start's format), normally 20 ms. */
      payload: Buffer;
      /** Milliseconds since the stream started, as the carrier stamps it. */
      timestampMs: number;
    }
  | { type: 'dtmf'; digit: string }
  /** A mark Parley sent came back: the audio sent before it has been played to the caller (or was cleared). */
  | { type: 'mark'; name: string }
  | { type: 'stop' }
  /** A rendezvous seat's peer-connection signalling for the other seat (opaque, size-bounded by the protocol). */
  | { type: 'signal'; data: Record<string, unknown> }
  /** An operator puts the phone call they claimed through to `destination`. */
  | { type: 'transfer'; destination: string }
  /** The stream must be refused before anything is attached (say, a browser presenting an API key): `refusal` names why. */
  | { type: 'refuse'; refusal: string; message: string };

/** What a session tells the far end beside audio, on protocols that carry it (a browser's); carriers ignore it. */
export type StreamNotice =
  /** `copy`: a rendezvous seat is asked for a copy of its microphone (for the recording or transcript). */
  | { type: 'call-start'; callId: string; agentId: string; direction: string; sampleRate: number; copy?: boolean }
  | { type: 'transcript'; role: 'user' | 'assistant'; text: string; language: string; startMs: number; endMs: number; interrupted: boolean }
  | { type: 'call-end'; reason: string }
  /** A rendezvous: the other seat joined or left (`offer`: this end makes the peer connection's offer). */
  | { type: 'peer'; state: 'joined' | 'left'; seat: string; offer: boolean }
  /** A rendezvous: the other seat's signalling, relayed as it sent it. */
  | { type: 'signal'; data: Record<string, unknown> }
  /** Something the far end asked could not be done; the call goes on. */
  | { type: 'error'; code: string; message: string };

export interface MediaFormat {
  /** `mulaw` (G.711 μ-law), `alaw` or `pcm16` (signed 16-bit little endian). */
  encoding: 'mulaw' | 'alaw' | 'pcm16';
  sampleRate: number;
  channels: number;
}

/** Reads and writes one carrier's stream messages. Pure: no sockets, no timers. */
export interface MediaStreamProtocol {
  /** The adapter's name, e.g. `twilio`. */
  readonly carrier: string;
  /** Parses one text frame; undefined for messages Parley does not use. Throws on frames it cannot read. */
  parse(frame: string): MediaStreamEvent | undefined;
  /** A frame playing `payload` (encoded in the stream's format) to the caller. */
  audio(streamId: string, payload: Buffer): string;
  /** A frame asking the carrier to report `name` once everything sent before it has played. */
  mark(streamId: string, name: string): string;
  /** A frame dropping every buffered, unplayed frame at once (barge-in); pending marks come back. */
  clear(streamId: string): string;
  /** A frame telling the far end `notice`; absent on carriers, which have no use for it. */
  notice?(streamId: string, notice: StreamNotice): string;
  /**
   * The close code and reason refusing a stream for `refusal` (a RealtimeRefusal the calls service named, `refused`
   * otherwise); absent: 1008 with a generic reason (a carrier only logs it).
   */
  refusal?(refusal: string, message: string): { code: number; reason: string };
  /** How long a stream may stay open without `start` before it is closed as unreadable; absent: no limit. */
  readonly startTimeoutMs?: number;
}
