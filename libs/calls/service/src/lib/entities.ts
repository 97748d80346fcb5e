import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { SuccessCriteria } from '@parley/contracts';
import { GroundingSource } from '@parley/contracts';
import { CallStatus } from './call-state';

/** A bigint column read as a number (counts well below 2^53). */
const BIGINT = { to: (v: number) => v, from: (v: string | null) => (v === null ? 0 : Number(v)) };

@Entity({ name: 'calls' })
export class CallEntity {
  @PrimaryColumn({ type: 'text' }) id: string;
  @Column({ name: 'account_id', type: 'text' }) accountId: string;
  @Column({ name: 'agent_id', type: 'text' }) agentId: string;
  @Column({ type: 'text' }) direction: 'outbound' | 'inbound' | 'web';
  @Column({ name: 'to_number', type: 'text' }) to: string;
  @Column({ name: 'from_number', type: 'text' }) from: string;
  @Column({ type: 'text' }) status: CallStatus;
  @Column({ name: 'end_reason', type: 'text', nullable: true }) endReason: string | null;
  @Column({ name: 'failure_reason', type: 'text', nullable: true }) failureReason: string | null;
  @Column({ type: 'text', nullable: true }) carrier: string | null;
  @Column({ name: 'carrier_call_id', type: 'text', nullable: true }) carrierCallId: string | null;
  @Column({ type: 'jsonb' }) variables: Record<string, string>;
  @Column({ type: 'jsonb' }) metadata: Record<string, string>;
  /** The project (prj_…) the call counts against: its agent's; null on calls stored before projects (the default project). */
  @Column({ name: 'project_id', type: 'text', nullable: true }) projectId: string | null;
  @Column({ type: 'int' }) turns: number;
  @Column({ name: 'recording_available', type: 'boolean' }) recordingAvailable: boolean;
  @Column({ name: 'transcript_available', type: 'boolean' }) transcriptAvailable: boolean;
  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 }) createdAt: Date;
  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 }) updatedAt: Date;
  @Column({ name: 'answered_at', type: 'timestamptz', precision: 3, nullable: true }) answeredAt: Date | null;
  @Column({ name: 'ended_at', type: 'timestamptz', precision: 3, nullable: true }) endedAt: Date | null;
  /** The agent's record_calls when the call was created. */
  @Column({ name: 'recording_enabled', type: 'boolean' }) recordingEnabled: boolean;
  @Column({ name: 'recording_key', type: 'text', nullable: true }) recordingKey: string | null;
  @Column({ name: 'recording_content_type', type: 'text', nullable: true }) recordingContentType: string | null;
  @Column({ name: 'recording_duration_seconds', type: 'double precision', nullable: true }) recordingDurationSeconds: number | null;
  /** host:port of the media worker that attached the call's latest stream: where its commands go (MediaCommands). */
  @Column({ name: 'media_worker', type: 'text', nullable: true }) mediaWorker: string | null;
  /** Last sign of life from the media stream; the stuck-call reaper counts from it. */
  @Column({ name: 'last_media_at', type: 'timestamptz', precision: 3, nullable: true }) lastMediaAt: Date | null;
  /** Where the carrier put the caller through, once transferred. */
  @Column({ name: 'transferred_to', type: 'text', nullable: true }) transferredTo: string | null;
  /** The media stream that placed the latest transfer (TransferCallRequest.stream_id): its stop never ends the call. */
  @Column({ name: 'transfer_stream_id', type: 'text', nullable: true }) transferStreamId: string | null;
  /** `human`, `machine` or `unknown` once the carrier's machine detection answered; null before or without it. */
  @Column({ name: 'answered_by', type: 'text', nullable: true }) answeredBy: string | null;
  /** Post-call summary; null until analysed, or when the agent's summary is off or the model gave none. */
  @Column({ type: 'text', nullable: true }) summary: string | null;
  /** Post-call extracted fields by name (each typed or null); null until analysed. */
  @Column({ type: 'jsonb', nullable: true }) extracted: Record<string, string | number | boolean | null> | null;
  @Column({ name: 'analysis_model', type: 'text', nullable: true }) analysisModel: string | null;
  @Column({ name: 'analysed_at', type: 'timestamptz', precision: 3, nullable: true }) analysedAt: Date | null;
  /** Failed analysis attempts so far. */
  @Column({ name: 'analysis_attempts', type: 'int', default: 0 }) analysisAttempts: number;
  /** Why the analysis was given up (after the last allowed attempt); null otherwise. */
  @Column({ name: 'analysis_error', type: 'text', nullable: true }) analysisError: string | null;
  /**
   * When the post-call analysis is next due: set when an analysable call ends, pushed forward as a lease while an
   * attempt runs and as the back-off after a failure; null once analysed, given up, with nothing to do, or never due.
   */
  @Column({ name: 'analysis_due_at', type: 'timestamptz', precision: 3, nullable: true }) analysisDueAt: Date | null;
  /** The Idempotency-Key of the create that made this outbound call: a retry with it gets this call. */
  @Column({ name: 'idempotency_key', type: 'text', nullable: true }) idempotencyKey: string | null;
  /** A rendezvous' two ends, in order, each taken once a browser joined with its token; null on any other call. */
  @Column({ type: 'jsonb', nullable: true }) seats: Seat[] | null;
  /** Answered by a person's claim (ClaimCall): an inbound call to a `simple` agent, or a rendezvous. */
  @Column({ type: 'boolean', default: false }) claimable: boolean;
  /** Who claimed it (the operator's name, or `api`); null before. */
  @Column({ name: 'claimed_by', type: 'text', nullable: true }) claimedBy: string | null;
  @Column({ name: 'claimed_at', type: 'timestamptz', precision: 3, nullable: true }) claimedAt: Date | null;
  /** The workflow run (wfr_…) that placed the call and the run's recipient it called; null on any other call. */
  @Column({ name: 'workflow_run_id', type: 'text', nullable: true }) workflowRunId: string | null;
  @Column({ name: 'workflow_recipient_id', type: 'text', nullable: true }) workflowRecipientId: string | null;
  /** Usage totals: the sums of the call's `call_usage` lines (each a stream's running total). */
  @Column({ name: 'usage_stt_ms', type: 'bigint', default: 0, transformer: BIGINT }) usageSttMs: number;
  @Column({ name: 'usage_llm_input_tokens', type: 'bigint', default: 0, transformer: BIGINT }) usageLlmInputTokens: number;
  @Column({ name: 'usage_llm_output_tokens', type: 'bigint', default: 0, transformer: BIGINT }) usageLlmOutputTokens: number;
  @Column({ name: 'usage_tts_characters', type: 'bigint', default: 0, transformer: BIGINT }) usageTtsCharacters: number;
  /** Costs in the price table's currency, exact decimals (numeric, read as strings); `cost` is their sum. */
  @Column({ name: 'cost_carrier', type: 'numeric', default: 0 }) costCarrier: string;
  @Column({ name: 'cost_stt', type: 'numeric', default: 0 }) costStt: string;
  @Column({ name: 'cost_llm', type: 'numeric', default: 0 }) costLlm: string;
  @Column({ name: 'cost_tts', type: 'numeric', default: 0 }) costTts: string;
  @Column({ type: 'numeric', default: 0 }) cost: string;
  /** The price table's currency when a cost was first written (usage, or the carrier's at the end); null before. */
  @Column({ name: 'cost_currency', type: 'text', nullable: true }) costCurrency: string | null;
  /** Agent turns stored, and of them the ones the caller cut off. */
  @Column({ name: 'agent_turns', type: 'int', default: 0 }) agentTurns: number;
  @Column({ name: 'barge_ins', type: 'int', default: 0 }) bargeIns: number;
  /** The agent's `post_call.success` when the call was created (null: it defined none); it decides `successful`. */
  @Column({ name: 'success_criteria', type: 'jsonb', nullable: true }) successCriteria: SuccessCriteria | null;
  /** Whether the call met them: null until decided (at its end, or by its analysis), or when there are none. */
  @Column({ type: 'boolean', nullable: true }) successful: boolean | null;
}

export interface Seat {
  name: string;
  taken: boolean;
  /** Whether its client sent the copy of its microphone the worker asked for (agents that record or transcribe). */
  copy?: boolean;
}

@Entity({ name: 'call_turns' })
export class CallTurnEntity {
  @PrimaryColumn({ name: 'call_id', type: 'text' }) callId: string;
  @PrimaryColumn({ type: 'int' }) seq: number;
  @Column({ name: 'account_id', type: 'text' }) accountId: string;
  @Column({ type: 'text' }) role: 'user' | 'assistant';
  @Column({ type: 'text' }) text: string;
  @Column({ type: 'text' }) language: string;
  @Column({ name: 'start_ms', type: 'bigint', transformer: { to: (v: number) => v, from: (v: string) => Number(v) } }) startMs: number;
  @Column({ name: 'end_ms', type: 'bigint', transformer: { to: (v: number) => v, from: (v: string) => Number(v) } }) endMs: number;
  @Column({ type: 'boolean' }) interrupted: boolean;
  /** The media stream the worker heard the turn on and its number there: a retried append is recognised by them. */
  @Column({ name: 'stream_id', type: 'text', nullable: true }) streamId: string | null;
  @Column({ name: 'stream_seq', type: 'int', nullable: true }) streamSeq: number | null;
  /** Who said it when the call's sides are people (a rendezvous seat); null on other calls. */
  @Column({ type: 'text', nullable: true }) speaker: string | null;
  /** The knowledge-base documents an agent's answer was grounded in, best first; [] on turns without. */
  @Column({ type: 'jsonb' }) grounding: GroundingSource[];
  /** An agent turn that answered the caller: end of their speech to the first audio, ms; null when not measured. */
  @Column({ name: 'response_latency_ms', type: 'int', nullable: true }) responseLatencyMs: number | null;
}
