import { AppError } from '@parley/rpc';
import { MediaWorkerGrpcController, SessionDirectory } from './media-worker.grpc-controller';

/** One open stream, of call_1, whose session records what it was told; `speaks`: a conversation runs on it. */
function worker(speaks = true) {
  const told: string[] = [];
  const session = {
    endStream: (reason: string) => void told.push(`end:${reason}`),
    leaveVoicemail: async (message: string) => {
      if (speaks) told.push(`voicemail:${message}`);
      return speaks;
    },
  };
  const sessions: SessionDirectory = { sessionOf: (callId) => (callId === 'call_1' ? session : undefined) };
  return { controller: new MediaWorkerGrpcController(sessions), told };
}

const code = async (run: () => unknown) => {
  try {
    await run();
  } catch (error) {
    return error instanceof AppError ? error.code : 'other';
  }
  return 'ok';
};

describe('the media worker’s commands', () => {
  it('closes the stream of the call it names, with the reason the call ended', () => {
    const { controller, told } = worker();

    expect(controller.endStream({ call_id: 'call_1', reason: 'hangup' })).toEqual({});

    expect(told).toEqual(['end:hangup']);
  });

  it('has the agent leave the voicemail message on the call it names', async () => {
    const { controller, told } = worker();

    expect(await controller.leaveVoicemail({ call_id: 'call_1', message: 'Please call us back.' })).toEqual({});

    expect(told).toEqual(['voicemail:Please call us back.']);
  });

  it('answers NOT_FOUND for a call whose stream it does not hold, and touches no other call', async () => {
    const { controller, told } = worker();

    expect(await code(() => controller.endStream({ call_id: 'call_2', reason: 'hangup' }))).toBe('not_found');
    expect(await code(() => controller.leaveVoicemail({ call_id: 'call_2', message: 'x' }))).toBe('not_found');
    expect(await code(() => controller.injectEvent({ call_id: 'call_2', event_id: 'cev_1', name: 'paid', payload_json: '{}' }))).toBe('not_found');
    expect(told).toEqual([]);
  });

  it('refuses a voicemail message on a stream where no conversation runs to speak it', async () => {
    const { controller } = worker(false);

    expect(await code(() => controller.leaveVoicemail({ call_id: 'call_1', message: 'x' }))).toBe('conflict');
  });

  it('refuses injected events as not implemented instead of dropping them', async () => {
    const { controller, told } = worker();

    expect(await code(() => controller.injectEvent({ call_id: 'call_1', event_id: 'cev_1', name: 'paid', payload_json: '{}' }))).toBe('not_implemented');
    expect(told).toEqual([]);
  });
});
