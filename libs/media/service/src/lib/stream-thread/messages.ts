/**
 * The messages between the media worker's main thread and its stream thread (playout-thread.ts), which owns the
 * carrier sockets. Types only: the thread file imports them type-only, so it runs without the workspace's aliases.
 */

/** What the thread is started with. */
export interface StreamThreadData {
  /** The carriers whose paths (`/streams/{carrier}`) are accepted; others are refused 404 at the upgrade. */
  carriers: string[];
  /** Further paths served, each with the protocol (carrier) its streams speak, e.g. `/realtime` → `web`. */
  paths: Record<string, string>;
  /** Largest frame accepted from a carrier, in bytes. */
  maxPayload: number;
  /** The scheduling priority (nice, -20..19) the thread takes when the process may; undefined: the process's own. */
  nice?: number;
}

/** Main → thread, applied in order (several per postMessage). */
export type ToThread =
  | { op: 'listen'; port: number; host: string }
  /** Agent audio of stream `id`, played one frame per 20 ms. */
  | { op: 'audio'; id: number; frame: string }
  /** Sent once the audio queued before it has been sent. */
  | { op: 'mark'; id: number; frame: string }
  /** Sent at once; the audio and marks still queued are dropped. */
  | { op: 'clear'; id: number; frame: string }
  | { op: 'close'; id: number; code: number; reason: string }
  /** Sent at once, ahead of queued audio (an event for a browser: a transcript turn, the call's end). */
  | { op: 'text'; id: number; frame: string }
  /** Refuse new streams (503 at the upgrade) and stop listening; live streams go on. Answered with `draining`. */
  | { op: 'drain' }
  /** Close every stream (1001) and the server; answered with `stopped`. */
  | { op: 'stop' };

/** Thread → main, in order (several per postMessage). */
export type FromThread =
  | { ev: 'listening'; port: number }
  | { ev: 'listen_failed'; message: string }
  | { ev: 'open'; id: number; carrier: string }
  /** Text frames from the carrier, in arrival order: `ids[i]` sent `frames[i]`. */
  | { ev: 'frames'; ids: number[]; frames: string[] }
  | { ev: 'closed'; id: number }
  | { ev: 'error'; id: number; message: string }
  /**
   * Since the last stats: frames sent, those more than a frame behind their slot, and |Δ − 20 ms| between
   * consecutive frames of each run as sent.
   */
  | { ev: 'stats'; sent: number; late: number; jitterMs: number[] }
  | { ev: 'draining' }
  | { ev: 'stopped' }
  /** Whether the thread took the priority it was started with (`nice` is what it has); `reason` when it could not. */
  | { ev: 'priority'; nice: number; taken: boolean; reason?: string };
