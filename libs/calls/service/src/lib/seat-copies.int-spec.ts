import { DataSource } from 'typeorm';
import { OutboxRecord } from '@parley/messaging';
import { NewCall } from './calls.repository';
import { CallsDomain } from './calls.domain';
import { CallsGrpcController } from './calls.grpc-controller';
import { CallTurnEntity } from './entities';
import { newCall } from './testing/new-call';
import { openTurnRoutes, TurnRoutes } from './testing/turn-routes';

describe('what a rendezvous’ record says of its seats’ copies: who said each turn, which seat sent a copy (real PostgreSQL)', () => {
  let dataSource: DataSource;
  let calls: CallsDomain;
  let grpc: CallsGrpcController;
  let routes: TurnRoutes;

  beforeAll(async () => {
    routes = await openTurnRoutes();
    ({ dataSource, calls, grpc } = routes);
  });

  afterAll(() => routes?.close());

  /** A call in progress. */
  const answered = async (call: Pick<NewCall, 'agentId' | 'direction' | 'to' | 'from' | 'carrier' | 'seats'>) => {
    const placed = await calls.insert(newCall(call));
    await calls.transition('acc_1', placed.id, () => ({ status: 'in_progress' }));
    return placed;
  };
  const turn = (text: string, speaker: string) => ({ role: 'user', text, language: 'en-US', start_ms: 0, end_ms: 900, interrupted: false, speaker, grounding: [], response_latency_ms: 0 });

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
