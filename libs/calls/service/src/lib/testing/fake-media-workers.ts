import { mediaV1 } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { MediaCommands } from '../media-commands';

export type SentCommand =
  | { address: string; command: 'end_stream'; req: mediaV1.EndStreamRequest }
  | { address: string; command: 'leave_voicemail'; req: mediaV1.LeaveVoicemailRequest }
  | { address: string; command: 'inject_event'; req: mediaV1.InjectEventRequest };

/**
 * Media workers as the calls service commands them, for its tests: each command is recorded with the address it
 * went to. A worker at an address in `gone` cannot be reached; a call in `notHeld` has no stream on any worker.
 */
export class FakeMediaWorkers {
  readonly sent: SentCommand[] = [];
  readonly gone = new Set<string>();
  readonly notHeld = new Set<string>();
  readonly commands = new MediaCommands((address) => ({
    endStream: async (req) => this.receive({ address, command: 'end_stream', req }),
    leaveVoicemail: async (req) => this.receive({ address, command: 'leave_voicemail', req }),
    injectEvent: async (req) => this.receive({ address, command: 'inject_event', req }),
    close: () => undefined,
  }));

  /** The commands sent about one call, in order. */
  about(callId: string): SentCommand[] {
    return this.sent.filter((c) => c.req.call_id === callId);
  }

  private receive(command: SentCommand): void {
    if (this.gone.has(command.address)) throw new AppError('service_unavailable', 'The media worker service is temporarily unavailable; retry shortly.');
    if (this.notHeld.has(command.req.call_id)) throw AppError.notFound('media stream');
    this.sent.push(command);
  }
}
