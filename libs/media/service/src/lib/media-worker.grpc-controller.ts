import { Controller, Inject } from '@nestjs/common';
import { mediaV1 } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import type { CallSession } from './call-session';

/** The sessions of this worker's open streams, by call (MediaStreamServer.sessionOf). */
export interface SessionDirectory {
  sessionOf(callId: string): Pick<CallSession, 'endStream' | 'leaveVoicemail'> | undefined;
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

  /** Refused, never dropped in silence: nothing on the worker acts on injected events until a flow runtime does. */
  injectEvent(req: mediaV1.InjectEventRequest): mediaV1.InjectEventResponse {
    this.held(req.call_id);
    throw new AppError('not_implemented', 'The media worker does not act on injected events yet.');
  }

  private held(callId: string): NonNullable<ReturnType<SessionDirectory['sessionOf']>> {
    const session = this.sessions.sessionOf(callId);
    if (!session) throw AppError.notFound('media stream of this call on this worker');
    return session;
  }
}
