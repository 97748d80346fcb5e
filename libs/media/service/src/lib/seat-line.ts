import type { StreamNotice } from '@parley/carrier-core';
import type { Link, LinkEnd } from './call-links';

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
 * audio runs between the browsers.
 */
export class SeatLine implements LinkEnd {
  private link: Link | undefined;
  private met = false;

  constructor(
    /** The seat's name. */
    readonly role: string,
    private readonly hooks: SeatLineHooks,
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
    this.hooks.notify({ type: 'peer', state: 'joined', seat, offer: makesOffer });
  }

  /** A seat's socket carries no audio (copies for records are not built). */
  heard(): void {
    // Nothing to pass on: the audio runs between the browsers.
  }

  audio(): void {
    // Audio runs between the browsers, never through the server.
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
