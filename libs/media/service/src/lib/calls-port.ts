import { callsV1 } from '@parley/contracts';

/**
 * What a call session needs from the control plane (gRPC clients in the worker, fakes in unit tests): attach a
 * stream to its call, report liveness, turns and the recording, end or transfer the call, read the agent.
 */
export interface CallsPort {
  attachMedia(req: callsV1.AttachMediaRequest): Promise<callsV1.Call>;
  heartbeat(req: callsV1.MediaHeartbeatRequest): Promise<boolean>;
  recordingReady(req: callsV1.RecordingReadyRequest): Promise<void>;
  appendTurn(req: callsV1.AppendTurnRequest): Promise<void>;
  endCall(req: callsV1.EndCallRequest): Promise<void>;
  transferCall(req: callsV1.TransferCallRequest): Promise<void>;
}

/** The agent as the engine reads it: its document and its effective (inherited) fields. */
export interface AgentsPort {
  getAgent(accountId: string, agentId: string): Promise<{ spec: Record<string, unknown>; effective: Record<string, unknown> }>;
}
