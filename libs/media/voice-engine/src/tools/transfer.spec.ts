import { parseEgressAllowlist } from '@parley/egress';
import { ManualClock } from '../clock';
import { ToolServer } from '../testing/tool-server';
import { notifyTransfer, transferDefinition, transferReason } from './transfer';

describe('transfer tool', () => {
  const server = new ToolServer();
  let base = '';
  beforeAll(async () => void (base = await server.start()));
  afterAll(() => server.close());

  it('lets the model give only a reason, never the destination', () => {
    expect(transferDefinition('to_sales', 'Sales').parameters).toEqual({
      type: 'object',
      properties: { reason: expect.objectContaining({ type: 'string' }) },
      additionalProperties: false,
    });
    expect(transferReason('{"reason":"wants sales","destination":"+19995550000"}')).toBe('wants sales');
    expect(transferReason('nonsense')).toBe('');
  });

  it('posts the details and waits at most 3 s for the webhook', async () => {
    server.hang();
    const clock = new ManualClock();
    const rt = { egress: parseEgressAllowlist('127.0.0.1').policy, internalHosts: [], clock, signal: new AbortController().signal };
    let done: { ok: boolean; error?: string } | undefined;
    void notifyTransfer(`${base}/transfer`, { callId: 'call_1', tool: 'to_sales', destination: '+15550100200', reason: 'sales' }, rt).then((r) => (done = r));
    for (let i = 0; i < 200 && !server.requests.length; i++) await new Promise((r) => setTimeout(r, 5));
    expect(JSON.parse(server.requests[0].body)).toEqual({ type: 'call.transfer', call_id: 'call_1', tool: 'to_sales', destination: '+15550100200', reason: 'sales' });
    await clock.advance(2_990);
    expect(done).toBeUndefined();
    await clock.advance(10);
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toEqual({ ok: false, error: 'no answer within 3 s' });
  });
});
