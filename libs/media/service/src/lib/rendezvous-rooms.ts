import { StreamNotice } from '@parley/carrier-core';

/** One seat's session as a room sees it: told notices, ended when the rendezvous is. */
export interface SeatMember {
  readonly seat: string;
  notify(notice: StreamNotice): void;
  /** Closes the seat's socket with `call-end` `reason` (once; later calls do nothing). */
  endStream(reason: string): void;
}

interface Room {
  members: SeatMember[];
  ring: NodeJS.Timeout | undefined;
  /** Both seats were here at some point: the call was answered. */
  met: boolean;
}

/**
 * The rendezvous calls on this worker: pairs the two seats' sockets of a call, relays their signalling and tells
 * each when the other joined or left. The server only signals; the audio runs between the browsers. Holds the ring
 * timer (from the first seat, `ringMs`), which is the worker's, like the session's start timer: the calls service
 * records the outcome (`onRingOut`). Both seats must reach this worker (standalone; routing across replicas is not
 * built): a seat that lands on another worker never meets its peer, and the call ends `no_answer`.
 */
export class RendezvousRooms {
  private readonly rooms = new Map<string, Room>();

  /**
   * `member` took its seat on `callId`. The first seat waits (ring timer started); the second meets it: each is
   * told of the other, and the second makes the offer. Returns whether the peer is here.
   */
  join(callId: string, member: SeatMember, ringMs: number, onRingOut: () => void): boolean {
    const room = this.rooms.get(callId);
    if (!room) {
      const ring = setTimeout(() => onRingOut(), ringMs);
      ring.unref();
      this.rooms.set(callId, { members: [member], ring, met: false });
      return false;
    }
    clearTimeout(room.ring);
    room.ring = undefined;
    room.met = true;
    for (const other of room.members) {
      other.notify({ type: 'peer', state: 'joined', seat: member.seat, offer: false });
      member.notify({ type: 'peer', state: 'joined', seat: other.seat, offer: true });
    }
    room.members.push(member);
    return true;
  }

  /** `data` from `member` to the other seat, as sent; false when no peer is there to take it. */
  relay(callId: string, member: SeatMember, data: Record<string, unknown>): boolean {
    const peers = this.rooms.get(callId)?.members.filter((m) => m !== member) ?? [];
    for (const peer of peers) peer.notify({ type: 'signal', data });
    return peers.length > 0;
  }

  /**
   * `member` left (hung up, closed, or its call ended): the other seat is told and its socket closed with
   * `reason`, since one end leaving ends the rendezvous. Returns whether the two ever met (the call was answered).
   */
  leave(callId: string, member: SeatMember, reason: string): boolean {
    const room = this.rooms.get(callId);
    if (!room) return false;
    room.members = room.members.filter((m) => m !== member);
    if (room.members.length === 0) {
      clearTimeout(room.ring);
      this.rooms.delete(callId);
    }
    for (const other of room.members) {
      other.notify({ type: 'peer', state: 'left', seat: member.seat, offer: false });
      other.endStream(reason);
    }
    return room.met;
  }

  get size(): number {
    return this.rooms.size;
  }
}
