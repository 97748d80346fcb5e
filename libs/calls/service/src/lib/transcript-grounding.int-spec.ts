import { DataSource } from 'typeorm';
import { CallsDomain } from './calls.domain';
import { CallsGrpcController } from './calls.grpc-controller';
import { CallTurnEntity } from './entities';
import { newCall } from './testing/new-call';
import { openTurnRoutes, TurnRoutes } from './testing/turn-routes';

describe('which knowledge-base documents grounded an answer, kept with its turn (real PostgreSQL)', () => {
  let dataSource: DataSource;
  let calls: CallsDomain;
  let grpc: CallsGrpcController;
  let routes: TurnRoutes;

  beforeAll(async () => {
    routes = await openTurnRoutes();
    ({ dataSource, calls, grpc } = routes);
  });

  afterAll(() => routes?.close());

  const turn = (role: 'user' | 'assistant', text: string, grounding: { document_id: string; knowledge_base_id: string; title: string; score: number }[] = []) => ({
    role,
    text,
    language: 'en-US',
    start_ms: 0,
    end_ms: 900,
    interrupted: false,
    speaker: '',
    grounding,
    response_latency_ms: 0,
  });

  it('gives back a turn appended with grounding with its documents, best first, and a turn without with none', async () => {
    const call = await calls.insert(newCall());
    await calls.transition('acc_1', call.id, () => ({ status: 'in_progress' }));
    const sources = [
      { document_id: 'doc_hours', knowledge_base_id: 'kb_faq', title: 'Opening hours', score: 0.92 },
      { document_id: 'doc_returns', knowledge_base_id: 'kb_faq', title: 'Returns policy', score: 0.41 },
    ];
    await grpc.appendTurn({ account_id: 'acc_1', call_id: call.id, stream_id: 'MZ1', seq: 1, turn: turn('user', 'When do you open?') });
    await grpc.appendTurn({ account_id: 'acc_1', call_id: call.id, stream_id: 'MZ1', seq: 2, turn: turn('assistant', 'We open at nine.', sources) });

    const { turns } = await grpc.getTranscript({ account_id: 'acc_1', id: call.id });
    expect(turns.map((t) => [t.role, t.text, t.grounding])).toEqual([
      ['user', 'When do you open?', []],
      ['assistant', 'We open at nine.', sources],
    ]);
    // Stored as the column's default on the turn without: [] (not null).
    const stored = await dataSource.getRepository(CallTurnEntity).find({ where: { callId: call.id }, order: { seq: 'ASC' } });
    expect(stored.map((t) => t.grounding)).toEqual([[], sources]);
  });
});
