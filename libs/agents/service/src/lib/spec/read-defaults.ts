import { DEFAULT_SUCCESS_END_REASONS } from '@parley/contracts';
import { AgentSpec } from './agent-spec';

/**
 * The contract's documented defaults of the agent's own (non-inheritable) fields, as every read shows them when
 * the agent was stored without them. Inheritable fields are left alone: their resolved value is in `effective`.
 * `autonomy` is inheritable but named by the contract's default too, so the agent's own value reads `agentic`.
 */
export const AGENT_READ_DEFAULTS = {
  mode: 'conversation',
  autonomy: 'agentic',
  language_detection: 'off',
  keypad_timeout_seconds: 7,
  max_no_input: 2,
  ring_seconds: 30,
} as const satisfies Partial<AgentSpec>;

/** Fills documented defaults in place, top level and inside the blocks the agent carries; returns the spec. */
export function withReadDefaults<T extends Omit<AgentSpec, 'spec_version'>>(spec: T): T {
  for (const [field, value] of Object.entries(AGENT_READ_DEFAULTS)) {
    (spec as Record<string, unknown>)[field] ??= value;
  }
  // "Absent means summary only": the block reads as what it means.
  spec.post_call ??= {};
  spec.post_call.summary ??= true;
  for (const field of spec.post_call.extraction ?? []) field.type ??= 'string';
  if (spec.post_call.success) spec.post_call.success.end_reasons ??= [...DEFAULT_SUCCESS_END_REASONS];
  if (spec.conversation) spec.conversation.voicemail ??= 'continue';
  for (const tc of spec.tool_configs ?? []) {
    if (tc.request) {
      tc.request.method ??= 'POST';
      tc.request.timeout_seconds ??= 8;
      for (const parameter of tc.request.parameters ?? []) parameter.in ??= 'body';
    }
  }
  for (const node of spec.flow?.nodes ?? []) {
    node.type ??= 'llm';
    for (const edge of node.edges ?? []) {
      edge.type ??= 'intent';
      if (edge.expression) edge.expression.logic ??= 'and';
    }
  }
  return spec;
}
