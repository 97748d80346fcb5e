import { callsV1, FlowTransition } from '@parley/contracts';
import { CallDto, FlowTransitionDto, GroundingSourceDto } from './call.dto';

const orNull = (s: string) => (s === '' ? null : s);

export function presentCall(c: callsV1.Call | undefined): CallDto {
  if (!c) throw new Error('calls service answered without a call');
  return {
    id: c.id,
    object: 'call',
    agent_id: c.agent_id,
    project_id: c.project_id,
    direction: c.direction,
    to: c.to,
    from: c.from,
    status: c.status,
    end_reason: orNull(c.end_reason),
    failure_reason: orNull(c.failure_reason),
    carrier: orNull(c.carrier),
    carrier_call_id: orNull(c.carrier_call_id),
    variables: c.variables,
    metadata: c.metadata,
    created_at: c.created_at,
    answered_at: orNull(c.answered_at),
    ended_at: orNull(c.ended_at),
    duration_seconds: c.duration_seconds,
    turns: c.turns,
    recording_available: c.recording_available,
    transcript_available: c.transcript_available,
    answered_by: orNull(c.answered_by),
    summary: orNull(c.summary),
    extracted: c.extracted_json ? (JSON.parse(c.extracted_json) as Record<string, unknown>) : null,
    successful: c.successful ?? null,
    seats: c.seats?.length ? c.seats.map((s) => ({ name: s.name, taken: s.taken, copy: s.copy ?? null })) : null,
    claimable: c.claimable,
    claimed_by: orNull(c.claimed_by),
    claimed_at: orNull(c.claimed_at),
    workflow_run_id: orNull(c.workflow_run_id ?? ''),
    workflow_recipient_id: orNull(c.workflow_recipient_id ?? ''),
    ...presentUsage(c),
  };
}

/** An exact decimal from the calls service as a JSON number, to 6 decimals. */
const amount = (s: string | undefined) => Math.round(Number(s || 0) * 1e6) / 1e6;

/** The call's usage and cost (docs/analytics.md, Usage and cost). */
function presentUsage(c: callsV1.Call): Pick<CallDto, 'usage' | 'cost'> {
  const u = c.usage;
  const k = c.cost;
  return {
    usage: {
      carrier_seconds: u?.carrier_seconds ?? 0,
      carrier_minutes: Number(u?.carrier_minutes ?? 0),
      stt_seconds: Math.round((u?.stt_seconds ?? 0) * 1000) / 1000,
      llm_input_tokens: Number(u?.llm_input_tokens ?? 0),
      llm_output_tokens: Number(u?.llm_output_tokens ?? 0),
      tts_characters: Number(u?.tts_characters ?? 0),
    },
    cost: {
      amount: amount(k?.amount),
      currency: k?.currency || null,
      breakdown: { carrier: amount(k?.carrier), stt: amount(k?.stt), llm: amount(k?.llm), tts: amount(k?.tts) },
    },
  };
}

/** The documents a turn's answer was grounded in, best first: [] on turns without (as TurnDto's speaker, always present). */
export function presentGrounding(sources: callsV1.GroundingSource[] | undefined): GroundingSourceDto[] {
  return (sources ?? []).map((g) => ({ document_id: g.document_id, knowledge_base_id: g.knowledge_base_id, title: g.title, score: g.score }));
}

/** A move of the call's flow, as the transcript and the event stream (`call.flow.transitioned`) show it. */
export function presentFlowTransition(callId: string, t: FlowTransition): FlowTransitionDto {
  return { object: 'flow_transition', call_id: callId, ...t };
}
