import { DataSource } from 'typeorm';
import { ServiceConfig } from '@parley/config';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallsDomain } from './calls.domain';
import { CallsGrpcController } from './calls.grpc-controller';
import { CallsRepository } from './calls.repository';
import { CallControl } from './call-control';
import { CallEntity, CallTurnEntity } from './entities';
import { CALLS_MIGRATIONS } from './migrations';
import { FakeMediaWorkers } from './testing/fake-media-workers';
import { CallAdmission } from './call-admission';
import { WebCalls } from './web-calls';

const config = Object.assign(new ServiceConfig(), { MAX_CONCURRENT_CALLS: 5, CALL_STUCK_SECONDS: 60, PUBLIC_URL: 'https://parley.example', SECRET_KEY: 'x'.repeat(40) });

describe('which knowledge-base documents grounded an answer, kept with its turn (real PostgreSQL)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let relay: OutboxRelay;
  let calls: CallsDomain;
  let grpc: CallsGrpcController;

  beforeAll(async () => {
    db = await createTestDatabase('parley_calls');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    const bus = new InProcessBus();
    bus.open();
    relay = new OutboxRelay(dataSource, bus);
    calls = new CallsDomain(new CallsRepository(dataSource), relay, bus, config, new FakeMediaWorkers().commands);
    // Only the turn routes are exercised: they need the domain alone.
    grpc = new CallsGrpcController(calls, {} as CallControl, new WebCalls(calls, {} as CallControl, {} as CallAdmission, config));
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
  });

  const turn = (role: 'user' | 'assistant', text: string, grounding: { document_id: string; knowledge_base_id: string; title: string; score: number }[] = []) => ({
    role,
    text,
    language: 'en-US',
    start_ms: 0,
    end_ms: 900,
    interrupted: false,
    speaker: '',
    grounding,
  });

  it('gives back a turn appended with grounding with its documents, best first, and a turn without with none', async () => {
    const call = await calls.insert({
      accountId: 'acc_1',
      agentId: 'agt_1',
      direction: 'outbound',
      to: '+15550100000',
      from: '+15550109999',
      status: 'queued',
      carrier: 'twilio',
      carrierCallId: null,
      recordingEnabled: true,
      variables: {},
      metadata: {},
    });
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
