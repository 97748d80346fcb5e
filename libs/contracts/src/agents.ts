/** The agent fields a group's `defaults` fill and an agent's `overrides` can claim (the public `overrides` enum). */
export const INHERITABLE_FIELDS = [
  'model',
  'models',
  'temperature',
  'max_tokens',
  'speed',
  'pitch',
  'autonomy',
  'capabilities',
  'knowledge_base_ids',
  'tools',
  'record_calls',
  'transcribe_calls',
  'transfer_number',
  'carrier',
  'filler_phrase',
  'webhook_url',
] as const;
export type InheritableField = (typeof INHERITABLE_FIELDS)[number];
