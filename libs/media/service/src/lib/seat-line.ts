import type { StreamNotice } from '@parley/carrier-core';
import type { Link, LinkEnd } from './call-links';
import type { SeatCopies } from './seat-copies';

export interface SeatLineHooks {
  /** Tells this seat's browser `notice`. */
  notify(notice: StreamNotice): void;
  /** The other seat is here: the call is answered, its ring stops. */
  met(): void;
  /** The other seat left: one end leaving ends the rendezvous, so this seat's socket ends with `reason`. */
  peerLeft(reason: string): void;
}

/**
 * One seat of a rendezvous on the call's link: told when the other seat joined (and whether it makes the peer
 * connection's offer) or left, and the two seats' signalling relayed between them. The server only signals; the
 * audio runs between the browsers. With `copies` (the agent records or transcribes), the copies of the microphones
 * the clients send on their sockets are handed to them, and the one the other seat forwards over the link too.
 */
export class SeatLine implements LinkEnd {
  private link: Link | undefined;
  private met = false;

  constructor(
    /** The seat's name. */
    readonly role: string,
    private readonly hooks: SeatLineHooks,
    private readonly copies?: SeatCopies,
  ) {}

  connect(link: Link): void {
    this.link = link;
  }

  /** Both seats were here at some point: the call was answered. */
  get answered(): boolean {
    return this.met;
  }

  /** This seat's signal, for the other; dropped before the other joined (a client signals once told `peer` joined). */
  send(data: Record<string, unknown>): void {
    this.link?.signal(data);
  }

  joined(seat: string, makesOffer: boolean): void {
    this.met = true;
    this.hooks.met();
    this.copies?.met(makesOffer, (pcm, rate) => this.link?.audio(pcm, rate));
    this.hooks.notify({ type: 'peer', state: 'joined', seat, offer: makesOffer });
  }

  /** A frame of this seat's copy of its microphone (the live audio runs between the browsers). */
  heard(pcm: Int16Array): void {
    this.copies?.heard(pcm);
  }

  /** The other seat's copy, forwarded to the seat that records. */
  audio(pcm: Int16Array, rate: number): void {
    this.copies?.peer(pcm, rate);
  }

  dtmf(): void {
    // No keypad between two browsers.
  }

  signal(data: Record<string, unknown>): void {
    this.hooks.notify({ type: 'signal', data });
  }

  left(seat: string, reason: string): void {
    this.hooks.notify({ type: 'peer', state: 'left', seat, offer: false });
    this.hooks.peerLeft(reason);
  }

  stop(reason: string): void {
    this.link?.leave(reason);
  }
}
