import { EDGE_TYPES } from './agents';
import type { FlowTransition as FlowTransitionMessage } from './gen/parley/calls/v1/calls';

/**
 * One turn of a call's transcript as the voice engine produces it and the calls service stores it (times in ms
 * from the start of the media stream). The wire form between them is callsV1.Turn.
 */
export interface TranscriptTurn {
  role: 'user' | 'assistant';
  text: string;
  language: string;
  startMs: number;
  endMs: number;
  /** The caller talked over it: `text` is what was heard. */
  interrupted: boolean;
  /** An agent answer's knowledge: the passages it was given (turn lookup and search_knowledge_base), best first. */
  grounding?: GroundingSource[];
}

/** A knowledge-base passage an answer was grounded in: which document grounded which answer. */
export interface GroundingSource {
  document_id: string;
  knowledge_base_id: string;
  title: string;
  /** The search's score, 0-1. */
  score: number;
}

/** How a flow moved: its first entry (`start`), or the type of the edge that fired. */
export const FLOW_TRANSITION_KINDS = ['start', ...EDGE_TYPES] as const;
export type FlowTransitionKind = (typeof FLOW_TRANSITION_KINDS)[number];

/**
 * One move of a call's conversation flow, as the voice engine reports it: where from, where to, why (the edge's
 * type, position, label and event) and what an intent edge captured (JSON-typed; the call's variables keep them as
 * text). On the call's event stream (`call.flow.transitioned`) and in its transcript.
 */
export interface FlowTransition {
  /** The node left; empty on the call's first entry. */
  from: string;
  to: string;
  kind: FlowTransitionKind;
  /** Position of the edge in the `from` node's `edges`; -1 on the first entry. */
  edge_index: number;
  /** The edge's `when` label, when it has one. */
  when?: string;
  /** The injected event an `event` edge fired on. */
  event?: string;
  /** Values an intent edge captured (also written to the call's variables). */
  captured?: Record<string, string | number | boolean>;
  /** Offset from the start of the media stream, in milliseconds. */
  at_ms: number;
}

/** A move as it crosses gRPC (callsV1.FlowTransition; RecordFlowTransitionRequest carries the same fields): the fields it does not have empty. */
export function flowTransitionMessage(t: FlowTransition): FlowTransitionMessage {
  return {
    from_node: t.from,
    to_node: t.to,
    kind: t.kind,
    edge_index: t.edge_index,
    when: t.when ?? '',
    event: t.event ?? '',
    captured_json: t.captured ? JSON.stringify(t.captured) : '',
    at_ms: t.at_ms,
  };
}

/**
 * A move from its gRPC fields; empty texts are the fields it does not have. Its kind and captured values are taken as
 * they are (the calls service checks a reported move's); broken `captured_json` throws.
 */
export function flowTransitionOfMessage(m: FlowTransitionMessage): FlowTransition {
  return {
    from: m.from_node,
    to: m.to_node,
    kind: m.kind as FlowTransitionKind,
    edge_index: m.edge_index,
    ...(m.when ? { when: m.when } : {}),
    ...(m.event ? { event: m.event } : {}),
    ...(m.captured_json ? { captured: JSON.parse(m.captured_json) as Record<string, string | number | boolean> } : {}),
    at_ms: Number(m.at_ms),
  };
}
