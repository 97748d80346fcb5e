import { callsV1 } from '@parley/contracts';

/**
 * What a call session needs from the calls service (a gRPC client in the worker, a fake in unit tests): attach
 * a stream to its call, report liveness, hand over the recording.
 */
export interface CallsPort {
  attachMedia(req: callsV1.AttachMediaRequest): Promise<callsV1.Call>;
  heartbeat(req: callsV1.MediaHeartbeatRequest): Promise<boolean>;
  recordingReady(req: callsV1.RecordingReadyRequest): Promise<void>;
}
