import { randomUUID } from 'node:crypto';
import { LIVE, MediaLinkMessage } from '@parley/contracts';
import type { Bus } from '@parley/messaging';
import { serviceLogger } from '@parley/observability';

/** One end of a call's media link, as its session takes what the other end sends. */
export interface LinkEnd {
  /** `phone`, `operator`, or a rendezvous seat's name. */
  readonly role: string;
  /**
   * The other end is on the link (it joined now, or was there first). `makesOffer`: this end is the one of the two
   * that starts a peer connection (a rendezvous): the later of two ends on one worker; across workers, the one with
   * the greater link id (both ends agree without another message, even when they joined at the same moment).
   */
  joined(role: string, makesOffer: boolean): void;
  /** Audio of the other end: 16-bit PCM at `rate`. */
  audio(pcm: Int16Array, rate: number): void;
  /** A keypress the other end sends, to be played here. */
  dtmf(digit: string): void;
  /** A rendezvous' signalling from the other seat, as it sent it. */
  signal(data: Record<string, unknown>): void;
  /** The other end left (its call ended, or its socket closed), for `reason`. */
  left(role: string, reason: string): void;
}

/** What an end sends on its link. Sends before the other end joined are dropped (nobody takes them). */
export interface Link {
  audio(pcm: Int16Array, rate: number): void;
  dtmf(digit: string): void;
  signal(data: Record<string, unknown>): void;
  /** This end goes (once): the other end is told `reason`. */
  leave(reason: string): void;
}

interface Member {
  id: string;
  end: LinkEnd;
  callId: string;
  /** The other end: in this process, or on another worker (known by its id, reached over the bus). */
  peer?: { local: Member } | { remote: string };
  stopListening?: () => void;
  gone: boolean;
}

/**
 * The links between the two ends of calls whose media passes between two sockets: a phone stream and the browser
 * of the person who claimed it, or a rendezvous' two seats. The ends may be on one worker (always so standalone):
 * then they are joined here, in memory; or on two workers behind a load balancer: then they meet on the bus
 * (LIVE.mediaLink, broadcast without storage: a link is live or nothing). An end that is alone listens on the bus
 * and says `hello`; the other end answers `here`. At most two ends per call.
 */
export class CallLinks {
  private readonly log = serviceLogger('media-worker');
  /** Ends of each call on this worker. */
  private readonly calls = new Map<string, Member[]>();

  constructor(private readonly bus?: Bus) {}

  async join(callId: string, end: LinkEnd): Promise<Link> {
    const member: Member = { id: randomUUID(), end, callId, gone: false };
    const alone = this.calls.get(callId)?.find((m) => !m.peer && !m.gone);
    this.calls.set(callId, [...(this.calls.get(callId) ?? []), member]);
    if (alone) {
      // The other end is on this worker: joined in memory, and it stops listening for a remote one.
      alone.stopListening?.();
      alone.stopListening = undefined;
      member.peer = { local: alone };
      alone.peer = { local: member };
      alone.end.joined(end.role, false);
      end.joined(alone.end.role, true);
    } else if (this.bus) {
      const subject = LIVE.mediaLink(callId).name;
      member.stopListening = await this.bus.listen(subject, (payload) => this.heard(member, payload as MediaLinkMessage));
      // Paired meanwhile by an end that joined this worker while the listen was under way: nothing to announce.
      if (!member.peer && !member.gone) this.send(member, { kind: 'hello', from: member.id, role: end.role }, true);
    }
    return {
      audio: (pcm, rate) => {
        const peer = member.peer;
        // In memory the samples are handed over as they are; only the bus needs them as text.
        if (peer && 'local' in peer && !member.gone) peer.local.end.audio(pcm, rate);
        else this.send(member, { kind: 'audio', from: member.id, pcm: Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64'), rate });
      },
      dtmf: (digit) => this.send(member, { kind: 'dtmf', from: member.id, digit }),
      signal: (data) => this.send(member, { kind: 'signal', from: member.id, data }),
      leave: (reason) => this.leave(member, reason),
    };
  }

  /** Calls with an end on this worker. */
  get size(): number {
    return this.calls.size;
  }

  private leave(member: Member, reason: string): void {
    if (member.gone) return;
    this.send(member, { kind: 'bye', from: member.id, role: member.end.role, reason });
    member.gone = true;
    member.stopListening?.();
    const peer = member.peer;
    if (peer && 'local' in peer) peer.local.peer = undefined;
    const rest = (this.calls.get(member.callId) ?? []).filter((m) => m !== member);
    if (rest.length) this.calls.set(member.callId, rest);
    else this.calls.delete(member.callId);
  }

  /** To the other end: in memory when it is here, else on the bus. A `hello` goes out before there is a peer; everything else only to one. */
  private send(member: Member, message: MediaLinkMessage, beforePeer = false): void {
    if (member.gone) return;
    const peer = member.peer;
    if (peer && 'local' in peer) return this.deliver(peer.local, message);
    if (!peer && !beforePeer) return;
    this.bus?.broadcast(LIVE.mediaLink(member.callId).name, message).catch((e: unknown) => this.log.warn({ err: e, callId: member.callId }, 'media link send failed'));
  }

  /** A message on the bus: the other end announcing itself, or sending. */
  private heard(member: Member, message: MediaLinkMessage): void {
    if (member.gone || message.from === member.id) return;
    if (message.kind === 'hello' || message.kind === 'here') {
      if (member.peer) return;
      member.peer = { remote: message.from };
      if (message.kind === 'hello') this.send(member, { kind: 'here', from: member.id, role: member.end.role });
      member.end.joined(message.role, member.id > message.from);
      return;
    }
    if (member.peer && 'remote' in member.peer && member.peer.remote === message.from) this.deliver(member, message);
  }

  private deliver(member: Member, message: MediaLinkMessage): void {
    const end = member.end;
    switch (message.kind) {
      case 'audio': {
        const bytes = Buffer.from(message.pcm, 'base64');
        // Copied out: a decoded Buffer may sit at an odd offset of its pool, which an Int16Array cannot view.
        return end.audio(new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + (bytes.byteLength & ~1))), message.rate);
      }
      case 'dtmf':
        return end.dtmf(message.digit);
      case 'signal':
        return end.signal(message.data);
      case 'bye':
        member.peer = undefined;
        return end.left(message.role, message.reason);
      default:
        return;
    }
  }
}
