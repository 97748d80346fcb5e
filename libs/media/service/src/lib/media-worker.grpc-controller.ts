import { Controller, Inject } from '@nestjs/common';
import { mediaV1 } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { eventPayload, type CallSession } from './call-session';

/** The sessions of this worker's open streams, by call (MediaStreamServer.sessionOf). */
export interface SessionDirectory {
  sessionOf(callId: string): Pick<CallSession, 'endStream' | 'leaveVoicemail' | 'injectEvent'> | undefined;
}
export const SESSION_DIRECTORY = 'SESSION_DIRECTORY';

const { MediaWorkerServiceControllerMethods } = mediaV1;

/**
 * The commands the calls service sends to the worker holding a call's stream (parley.media.v1). A call this worker
 * holds no open stream of is NOT_FOUND: its stream finished, or another worker carries it now.
 */
@Controller()
@MediaWorkerServiceControllerMethods()
export class MediaWorkerGrpcController implements mediaV1.MediaWorkerServiceController {
  constructor(@Inject(SESSION_DIRECTORY) private readonly sessions: SessionDirectory) {}

  endStream(req: mediaV1.EndStreamRequest): mediaV1.EndStreamResponse {
    this.held(req.call_id).endStream(req.reason);
    return {};
  }

  async leaveVoicemail(req: mediaV1.LeaveVoicemailRequest): Promise<mediaV1.LeaveVoicemailResponse> {
    if (!(await this.held(req.call_id).leaveVoicemail(req.message))) throw new AppError('conflict', 'No conversation runs on this call’s stream to speak the message.');
    return {};
  }

  /** Handed to the call's conversation (its flow's event edges); answered once the session took it. */
  async injectEvent(req: mediaV1.InjectEventRequest): Promise<mediaV1.InjectEventResponse> {
    const session = this.held(req.call_id);
    const payload = eventPayload(req.payload_json);
    if (!payload) throw AppError.validation([{ field: 'payload_json', message: 'must be a JSON object' }]);
    await session.injectEvent(req.name, payload, req.event_id);
    return {};
  }

  private held(callId: string): NonNullable<ReturnType<SessionDirectory['sessionOf']>> {
    const session = this.sessions.sessionOf(callId);
    if (!session) throw AppError.notFound('media stream of this call on this worker');
    return session;
  }
}
