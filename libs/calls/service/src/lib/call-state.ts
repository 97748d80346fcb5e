import type { EndReason } from '@parley/contracts';
/**
 * The call state machine. queued → ringing → in_progress → ended; `failed` is the abnormal end from any live
 * state. Ended and failed calls never change again (ending one is a 409 conflict).
 */
export const CALL_STATUSES = ['queued', 'ringing', 'in_progress', 'ended', 'failed'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];

const NEXT: Record<CallStatus, readonly CallStatus[]> = {
  queued: ['ringing', 'in_progress', 'ended', 'failed'],
  ringing: ['in_progress', 'ended', 'failed'],
  in_progress: ['ended', 'failed'],
  ended: [],
  failed: [],
};

export function isLive(status: CallStatus): boolean {
  return NEXT[status].length > 0;
}

export function canMove(from: CallStatus, to: CallStatus): boolean {
  return NEXT[from].includes(to);
}

/** Why the voice engine may end a call (EndCall reasons beyond the API's hangup and given_up). */
export const ENGINE_END_REASONS: readonly EndReason[] = ['completed', 'silence', 'max_duration', 'no_input', 'voicemail', 'shutdown'];
/** Why a media worker may end a call: the engine's reasons, and `no_answer` (a claimed call whose operator never came). */
export const MEDIA_END_REASONS: readonly EndReason[] = [...ENGINE_END_REASONS, 'no_answer'];

/** How an API-initiated end is recorded: before the call was answered it is a cancellation. */
export function reasonForEnd(status: CallStatus): EndReason {
  return status === 'in_progress' ? 'hangup' : 'canceled';
}
