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
    injectEvent: async (name: string, payload: Record<string, unknown>) => void told.push(`event:${name}:${JSON.stringify(payload)}`),
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

  it('hands an injected event with its payload to the session of the call it names', async () => {
    const { controller, told } = worker();

    expect(await controller.injectEvent({ call_id: 'call_1', event_id: 'cev_1', name: 'payment_received', payload_json: '{"amount":42,"order":{"id":"o_1"}}' })).toEqual({});
    expect(await controller.injectEvent({ call_id: 'call_1', event_id: 'cev_2', name: 'ping', payload_json: '' })).toEqual({});

    expect(told).toEqual(['event:payment_received:{"amount":42,"order":{"id":"o_1"}}', 'event:ping:{}']);
  });

  it('refuses an injected event whose payload is not a JSON object, handing nothing on', async () => {
    const { controller, told } = worker();

    for (const payload_json of ['[1]', '42', 'null', '{not json'])
      expect(await code(() => controller.injectEvent({ call_id: 'call_1', event_id: 'cev_1', name: 'paid', payload_json }))).toBe('validation_error');
    expect(told).toEqual([]);
  });
});
