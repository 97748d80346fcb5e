/** Why a call ended (the call record's `end_reason`, `call.ended`'s data), whoever ended it. */
export const END_REASONS = [
  'completed',
  'hangup',
  'canceled',
  'no_answer',
  'busy',
  'given_up',
  'no_media',
  'media_lost',
  'carrier_error',
  'voicemail',
  'transferred',
  'silence',
  'max_duration',
  'no_input',
  'shutdown',
] as const;
export type EndReason = (typeof END_REASONS)[number];
