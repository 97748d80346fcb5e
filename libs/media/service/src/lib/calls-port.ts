import { callsV1, EffectiveConfig } from '@parley/contracts';
import type { AgentSpec, RuntimeTools } from '@parley/voice-engine';

/** A call's transcript as GetTranscript answers it, without the call. */
export type Transcript = Pick<callsV1.GetTranscriptResponse, 'turns' | 'transitions'>;

/**
 * What a call session needs from the control plane (gRPC clients in the worker, fakes in unit tests): attach a
 * stream to its call, report liveness, turns, tool calls, flow transitions, opt-outs and the recording, end or
 * transfer the call, read the agent.
 */
export interface CallsPort {
  /**
   * `seat`: the rendezvous seat the stream took (absent or empty: not a seat). `role`: who the stream is (`operator`:
   * the browser of the person who claimed the call). `awaitClaim`: a phone stream that rings until someone claims it.
   * `pendingEvents`: events injected before this stream attached that no conversation took yet, in injection order
   * (handed over once: the calls service cleared them with this attach); absent: none.
   */
  attachMedia(
    req: callsV1.AttachMediaRequest,
  ): Promise<{ call: callsV1.Call; resume: string; seat?: string; role?: string; awaitClaim?: boolean; pendingEvents?: callsV1.PendingEvent[] }>;
  /** The call's turns so far and its flow's moves (a resumed conversation picks up from them). */
  getTranscript(req: callsV1.GetTranscriptRequest): Promise<Transcript>;
  heartbeat(req: callsV1.MediaHeartbeatRequest): Promise<boolean>;
  recordingReady(req: callsV1.RecordingReadyRequest): Promise<void>;
  /** A rendezvous seat's session ended: whether its client sent the copy asked for. Only seat sessions call it. */
  reportSeatCopy?(req: callsV1.ReportSeatCopyRequest): Promise<void>;
  appendTurn(req: callsV1.AppendTurnRequest): Promise<void>;
  endCall(req: callsV1.EndCallRequest): Promise<void>;
  transferCall(req: callsV1.TransferCallRequest): Promise<void>;
  /** call.tool.called */
  recordToolCall(req: callsV1.RecordToolCallRequest): Promise<void>;
  /** The caller asked not to be contacted again (call.opt_out). */
  recordOptOut(req: callsV1.RecordOptOutRequest): Promise<void>;
  /** The conversation flow moved (call.flow.transitioned on the call's event stream; stored with its transcript). */
  recordFlowTransition(req: callsV1.RecordFlowTransitionRequest): Promise<void>;
  /** The end-of-call survey took a rating (csat.received, source `keypad`); idempotent per call and source. */
  recordRating?(req: callsV1.RecordRatingRequest): Promise<void>;
  /** The stream's usage of its vendors so far (running totals; RecordUsage keeps the largest of each line). */
  recordUsage?(req: callsV1.RecordUsageRequest): Promise<void>;
}

/**
 * The agent as the engine reads it: its document, its effective (inherited) fields and, from the internal runtime
 * read, the tools it executes with their secrets in the clear (absent: the document's redacted tool configs).
 */
export interface AgentsPort {
  getAgent(accountId: string, agentId: string): Promise<{ spec: AgentSpec; effective: EffectiveConfig; runtime?: RuntimeTools }>;
}
