import { CallStatus, isLive } from './call-state';
import type { Transition } from './calls.domain';

/** What the reaper reads of a call; every time is compared with the database's clock (`now`). */
export interface ReapableCall {
  status: CallStatus;
  direction: string;
  updatedAt: Date;
  lastMediaAt: Date | null;
  transferredTo: string | null;
}

export interface ReapLimits {
  /** CALL_STUCK_SECONDS: no progress and no media for this long. */
  stuckSeconds: number;
  /** MEDIA_LOST_SECONDS: an answered call whose media worker stopped its heartbeats for this long. */
  mediaLostSeconds: number;
}

/**
 * The reaper's decision for one live call at the database time `now`:
 * - `media_lost`: answered, its media stream was attached (it has heartbeats) and the last one is older than
 *   `mediaLostSeconds` — the media worker died or lost the stream without saying so;
 * - `no_media`: neither progress nor media for `stuckSeconds` (never answered, or answered without any stream);
 * - `canceled` (ended, not failed): a web call no browser joined in `stuckSeconds` — its caller never came.
 * A transferred call carries no media to Parley by design (the carrier's completed callback ends it).
 */
export function stuckCallTransition(call: ReapableCall, now: Date, limits: ReapLimits): Transition | undefined {
  if (!isLive(call.status) || call.transferredTo !== null) return undefined;
  const secondsSince = (at: Date) => (now.getTime() - at.getTime()) / 1000;
  if (call.status === 'in_progress' && call.lastMediaAt && secondsSince(call.lastMediaAt) > limits.mediaLostSeconds) {
    return {
      status: 'failed',
      endReason: 'media_lost',
      failureReason: `The media stream stopped without ending the call: no heartbeat from the media worker for ${limits.mediaLostSeconds} s.`,
    };
  }
  const idle = Math.min(secondsSince(call.updatedAt), call.lastMediaAt ? secondsSince(call.lastMediaAt) : Infinity);
  if (idle > limits.stuckSeconds && call.direction === 'web' && call.status === 'queued') return { status: 'ended', endReason: 'canceled' };
  if (idle > limits.stuckSeconds) {
    return { status: 'failed', endReason: 'no_media', failureReason: `No progress and no media for ${limits.stuckSeconds} s.` };
  }
  return undefined;
}
