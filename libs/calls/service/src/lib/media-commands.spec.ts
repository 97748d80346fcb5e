import { AppError } from '@parley/rpc';
import { MediaCommands, mediaCommands, MediaWorkerClient } from './media-commands';

/** A dialer recording which addresses it opened and closed; `fail` decides how a worker answers. */
function dialer(fail: (address: string) => Error | undefined = () => undefined) {
  const opened: string[] = [];
  const closed: string[] = [];
  const received: { address: string; call_id: string; what: string }[] = [];
  const dial = (address: string): MediaWorkerClient => {
    opened.push(address);
    const answer = async (call_id: string, what: string) => {
      const error = fail(address);
      if (error) throw error;
      received.push({ address, call_id, what });
    };
    return {
      endStream: (req) => answer(req.call_id, `end:${req.reason}`),
      leaveVoicemail: (req) => answer(req.call_id, `voicemail:${req.message}`),
      injectEvent: (req) => answer(req.call_id, `event:${req.event_id}:${req.name}:${req.payload_json}`),
      close: () => void closed.push(address),
    };
  };
  return { dial, opened, closed, received };
}

const count = async (command: string, outcome: string) =>
  (await mediaCommands.get()).values.find((v) => v.labels['command'] === command && v.labels['outcome'] === outcome)?.value ?? 0;

describe('commands to the media worker holding a call', () => {
  it('sends each command to the worker the call names, over one client per address', async () => {
    const workers = dialer();
    const commands = new MediaCommands(workers.dial);

    expect(await commands.endStream({ id: 'call_1', mediaWorker: '10.0.0.1:50053', endReason: 'hangup' })).toBe('delivered');
    expect(await commands.leaveVoicemail({ id: 'call_2', mediaWorker: '10.0.0.2:50053' }, 'Call us back.')).toBe('delivered');
    expect(await commands.endStream({ id: 'call_3', mediaWorker: '10.0.0.1:50053', endReason: 'completed' })).toBe('delivered');
    const event = { id: 'cev_1', name: 'payment_received', payload: { amount: 42 }, created_at: '2026-11-25T09:00:00.000Z' };
    expect(await commands.injectEvent({ id: 'call_4', mediaWorker: '10.0.0.2:50053' }, event)).toBe('delivered');

    expect(workers.received).toEqual([
      { address: '10.0.0.1:50053', call_id: 'call_1', what: 'end:hangup' },
      { address: '10.0.0.2:50053', call_id: 'call_2', what: 'voicemail:Call us back.' },
      { address: '10.0.0.1:50053', call_id: 'call_3', what: 'end:completed' },
      { address: '10.0.0.2:50053', call_id: 'call_4', what: 'event:cev_1:payment_received:{"amount":42}' },
    ]);
    expect(workers.opened).toEqual(['10.0.0.1:50053', '10.0.0.2:50053']);
  });

  it('says why a command was not carried out, never throws, and counts each outcome', async () => {
    const workers = dialer((address) =>
      address.startsWith('gone') ? new AppError('service_unavailable', 'unreachable') : address.startsWith('moved') ? AppError.notFound('media stream') : undefined,
    );
    const commands = new MediaCommands(workers.dial);
    const before = { undelivered: await count('end_stream', 'undelivered'), notFound: await count('end_stream', 'not_found'), none: await count('end_stream', 'no_worker') };

    expect(await commands.endStream({ id: 'call_1', mediaWorker: 'gone:50053', endReason: 'hangup' })).toBe('undelivered');
    expect(await commands.endStream({ id: 'call_2', mediaWorker: 'moved:50053', endReason: 'hangup' })).toBe('not_found');
    expect(await commands.endStream({ id: 'call_3', mediaWorker: null, endReason: 'canceled' })).toBe('no_worker');

    expect(await count('end_stream', 'undelivered')).toBe(before.undelivered + 1);
    expect(await count('end_stream', 'not_found')).toBe(before.notFound + 1);
    expect(await count('end_stream', 'no_worker')).toBe(before.none + 1);
    // No stream attached: no worker is dialled.
    expect(workers.opened).toEqual(['gone:50053', 'moved:50053']);
  });

  it('keeps at most 64 clients open, closing the one used least recently', async () => {
    const workers = dialer();
    const commands = new MediaCommands(workers.dial);

    for (let i = 0; i < 64; i++) await commands.endStream({ id: `call_${i}`, mediaWorker: `w${i}:1`, endReason: 'completed' });
    await commands.endStream({ id: 'again', mediaWorker: 'w0:1', endReason: 'completed' });
    await commands.endStream({ id: 'new', mediaWorker: 'w64:1', endReason: 'completed' });

    expect(workers.closed).toEqual(['w1:1']);
    commands.onApplicationShutdown();
    expect(workers.closed).toHaveLength(65);
  });
});
