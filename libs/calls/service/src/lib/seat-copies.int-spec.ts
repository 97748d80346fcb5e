import { DataSource } from 'typeorm';
import { ServiceConfig } from '@parley/config';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallsDomain } from './calls.domain';
import { CallsGrpcController } from './calls.grpc-controller';
import { CallsRepository, NewCall } from './calls.repository';
import { CallControl } from './call-control';
import { CallEntity, CallTurnEntity } from './entities';
import { CALLS_MIGRATIONS } from './migrations';
import { FakeMediaWorkers } from './testing/fake-media-workers';
import { CallAdmission } from './call-admission';
import { WebCalls } from './web-calls';

const config = Object.assign(new ServiceConfig(), { MAX_CONCURRENT_CALLS: 5, CALL_STUCK_SECONDS: 60, PUBLIC_URL: 'https://parley.example', SECRET_KEY: 'x'.repeat(40) });

describe('what a rendezvous’ record says of its seats’ copies: who said each turn, which seat sent a copy (real PostgreSQL)', () => {
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
    // Only the turn and seat routes are exercised: they need the domain (and the web calls on it) alone.
    grpc = new CallsGrpcController(calls, {} as CallControl, new WebCalls(calls, {} as CallControl, {} as CallAdmission, config));
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
  });

  /** A call in progress. */
  const answered = async (call: Pick<NewCall, 'agentId' | 'direction' | 'to' | 'from' | 'carrier' | 'seats'>) => {
    const placed = await calls.insert({ accountId: 'acc_1', status: 'queued', carrierCallId: null, recordingEnabled: true, variables: {}, metadata: {}, ...call });
    await calls.transition('acc_1', placed.id, () => ({ status: 'in_progress' }));
    return placed;
  };
  const turn = (text: string, speaker: string) => ({ role: 'user', text, language: 'en-US', start_ms: 0, end_ms: 900, interrupted: false, speaker, grounding: [] });

  it('stores each rendezvous seat as the speaker of its turns, reads it back, and puts it on call.transcript.updated', async () => {
    const call = await answered({ agentId: 'agt_meet', direction: 'web', to: '', from: '', carrier: 'web' });
    await grpc.appendTurn({ account_id: 'acc_1', call_id: call.id, stream_id: 's_a', seq: 1, turn: turn('Good morning, doctor.', 'patient') });
    await grpc.appendTurn({ account_id: 'acc_1', call_id: call.id, stream_id: 's_b', seq: 1, turn: turn('Morning! What brings you in?', 'doctor') });

    const { turns } = await grpc.getTranscript({ account_id: 'acc_1', id: call.id });
    expect(turns.map((t) => [t.speaker, t.role, t.text])).toEqual([
      ['patient', 'user', 'Good morning, doctor.'],
      ['doctor', 'user', 'Morning! What brings you in?'],
    ]);
    const events = (await dataSource.getRepository(OutboxRecord).find({ order: { createdAt: 'ASC' } }))
      .map((r) => r.payload as { type: string; call_id: string; data: Record<string, unknown> })
      .filter((e) => e.call_id === call.id && e.type === 'call.transcript.updated');
    expect(events.map((e) => e.data['speaker'])).toEqual(['patient', 'doctor']);
  });

  it('leaves the speaker empty (null in the table, absent from the event) on a call whose turns name none', async () => {
    const call = await answered({ agentId: 'agt_1', direction: 'outbound', to: '+15550100000', from: '+15550109999', carrier: 'twilio' });
    await grpc.appendTurn({ account_id: 'acc_1', call_id: call.id, stream_id: 's_1', seq: 1, turn: turn('Hi!', '') });

    expect((await grpc.getTranscript({ account_id: 'acc_1', id: call.id })).turns.map((t) => t.speaker)).toEqual(['']);
    expect((await dataSource.getRepository(CallTurnEntity).findOneByOrFail({ callId: call.id })).speaker).toBeNull();
    const event = (await dataSource.getRepository(OutboxRecord).find())
      .map((r) => r.payload as { type: string; call_id: string; data: Record<string, unknown> })
      .find((e) => e.call_id === call.id && e.type === 'call.transcript.updated');
    expect(event?.data).not.toHaveProperty('speaker');
  });

  it('shows on the call’s seats which clients sent the copy they were asked for, and refuses a seat the call does not have', async () => {
    const call = await answered({ agentId: 'agt_meet', direction: 'web', to: '', from: '', carrier: 'web', seats: [{ name: 'doctor', taken: true }, { name: 'patient', taken: true }] });
    await grpc.reportSeatCopy({ account_id: 'acc_1', call_id: call.id, seat: 'doctor', sent: true });
    await grpc.reportSeatCopy({ account_id: 'acc_1', call_id: call.id, seat: 'patient', sent: false });
    expect((await calls.get('acc_1', call.id)).seats).toEqual([
      { name: 'doctor', taken: true, copy: true },
      { name: 'patient', taken: true, copy: false },
    ]);
    await expect(grpc.reportSeatCopy({ account_id: 'acc_1', call_id: call.id, seat: 'nurse', sent: true })).rejects.toMatchObject({ code: 'validation_error' });
  });
});
