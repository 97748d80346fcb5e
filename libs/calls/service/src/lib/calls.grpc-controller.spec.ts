import { callsV1, FlowTransition } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { CallControl } from './call-control';
import { CallsDomain } from './calls.domain';
import { CallsGrpcController } from './calls.grpc-controller';
import { WebCalls } from './web-calls';

/** The controller over a domain that records the flow moves it is given. */
function controller() {
  const recorded: { accountId: string; id: string; transition: FlowTransition; stream?: { id: string; seq: number } }[] = [];
  const calls = {
    flowTransitioned: async (accountId: string, id: string, transition: FlowTransition, stream?: { id: string; seq: number }) => void recorded.push({ accountId, id, transition, stream }),
  } as unknown as CallsDomain;
  return { grpc: new CallsGrpcController(calls, {} as CallControl, {} as WebCalls), recorded };
}

const request = (over: Partial<callsV1.RecordFlowTransitionRequest> = {}): callsV1.RecordFlowTransitionRequest => ({
  account_id: 'acc_1',
  call_id: 'call_1',
  from_node: 'greet',
  to_node: 'offer',
  kind: 'intent',
  edge_index: 1,
  when: 'Wants to upgrade',
  event: '',
  captured_json: '{"seats":12,"annual":true,"plan":"pro"}',
  at_ms: 5250,
  stream_id: 'MZ1',
  seq: 3,
  ...over,
});

const code = (run: () => Promise<unknown>) => run().then(() => 'ok', (e: unknown) => (e instanceof AppError ? e.code : 'other'));

describe('RecordFlowTransition', () => {
  it('records the move with its stream number, leaving out the fields it does not have', async () => {
    const { grpc, recorded } = controller();

    await grpc.recordFlowTransition(request());
    await grpc.recordFlowTransition(request({ from_node: '', to_node: 'greet', kind: 'start', edge_index: -1, when: '', captured_json: '', at_ms: 0, stream_id: '', seq: 0 }));

    expect(recorded).toEqual([
      {
        accountId: 'acc_1',
        id: 'call_1',
        transition: { from: 'greet', to: 'offer', kind: 'intent', edge_index: 1, when: 'Wants to upgrade', captured: { seats: 12, annual: true, plan: 'pro' }, at_ms: 5250 },
        stream: { id: 'MZ1', seq: 3 },
      },
      { accountId: 'acc_1', id: 'call_1', transition: { from: '', to: 'greet', kind: 'start', edge_index: -1, at_ms: 0 }, stream: undefined },
    ]);
  });

  it('refuses a kind the flow does not have and captured values that are not a JSON object of scalars', async () => {
    const { grpc, recorded } = controller();

    expect(await code(() => grpc.recordFlowTransition(request({ kind: 'jump' })))).toBe('validation_error');
    for (const captured_json of ['[1]', '{"nested":{"a":1}}', '{broken', 'null'])
      expect(await code(() => grpc.recordFlowTransition(request({ captured_json })))).toBe('validation_error');
    expect(recorded).toEqual([]);
  });
});
