import { DataSource } from 'typeorm';
import { CallActivity, LIVE } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
// eslint-disable-next-line @nx/enforce-module-boundaries -- test-only helper for a fresh database
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallsDomain, TRANSCRIPT_GRACE_MS } from './calls.domain';
import { CallsRepository } from './calls.repository';
import { CallEntity, CallTurnEntity } from './entities';
import { CALLS_MIGRATIONS } from './migrations';
import { FakeMediaWorkers } from './testing/fake-media-workers';
import { newCall } from './testing/new-call';

const config = Object.assign(new ServiceConfig(), { MAX_CONCURRENT_CALLS: 5, CALL_STUCK_SECONDS: 60, PUBLIC_URL: 'https://parley.example' });

describe('calls domain (real PostgreSQL)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let bus: InProcessBus;
  let calls: CallsDomain;
  const workers = new FakeMediaWorkers();
  let relay: OutboxRelay;
  const heard: CallActivity[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('parley_calls');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    bus = new InProcessBus();
    bus.open();
    await bus.listen(LIVE.callActivity('*').name, (p) => void heard.push(p as CallActivity));
    relay = new OutboxRelay(dataSource, bus);
    calls = new CallsDomain(new CallsRepository(dataSource), relay, bus, config, workers.commands);
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
  });

  const outbox = async (callId: string) =>
    ((await dataSource.getRepository(OutboxRecord).find({ order: { createdAt: 'ASC' } })) as OutboxRecord[])
      .filter((r) => r.subject.startsWith('parley.events.'))
      .map((r) => r.payload as { type: string; call_id: string; data: unknown })
      .filter((e) => e.call_id === callId);

  it('appends turns in order, counts them, and writes call.transcript.updated with each', async () => {
    const call = await calls.insert(newCall());
    await calls.transition('acc_1', call.id, () => ({ status: 'in_progress' }));
    await calls.appendTurn('acc_1', call.id, { role: 'assistant', text: 'Hello, this is Ada.', language: 'en-US', startMs: 0, endMs: 1400, interrupted: false });
    const count = await calls.appendTurn('acc_1', call.id, { role: 'user', text: 'Hi!', language: 'en-US', startMs: 1600, endMs: 2100, interrupted: false });

    expect(count).toBe(2);
    const { call: after, turns } = await calls.transcript('acc_1', call.id);
    expect(after).toMatchObject({ turns: 2, transcriptAvailable: true });
    expect(turns.map((t) => [t.seq, t.role, t.text, t.startMs, t.endMs])).toEqual([
      [1, 'assistant', 'Hello, this is Ada.', 0, 1400],
      [2, 'user', 'Hi!', 1600, 2100],
    ]);
    const types = (await outbox(call.id)).map((e) => e.type);
    expect(types).toEqual(['call.started', 'call.transcript.updated', 'call.transcript.updated']);
    expect(heard.filter((a) => a.kind === 'event' && a.event.call_id === call.id && a.event.type === 'call.transcript.updated')).toHaveLength(2);
  });

  it('keeps a turn appended right after the call ended, after the others, and closes the transcript after the grace', async () => {
    const call = await calls.insert(newCall());
    await calls.transition('acc_1', call.id, () => ({ status: 'in_progress' }));
    await calls.appendTurn('acc_1', call.id, { role: 'user', text: 'Bye', language: '', startMs: 0, endMs: 500, interrupted: false });
    const ended = await calls.transition('acc_1', call.id, () => ({ status: 'ended', endReason: 'hangup' }));
    // The answer the caller hung up on: it started before the end and reaches the service just after it.
    const late = { role: 'assistant' as const, text: 'Goodbye and', language: '', startMs: 700, endMs: 1500, interrupted: true, stream: { id: 'MZ1', seq: 2 } };
    expect(await calls.appendTurn('acc_1', call.id, late)).toBe(2);
    const { call: after, turns } = await calls.transcript('acc_1', call.id);
    expect(after).toMatchObject({ status: 'ended', turns: 2 });
    expect(turns.map((t) => [t.seq, t.role, t.text, t.interrupted])).toEqual([
      [1, 'user', 'Bye', false],
      [2, 'assistant', 'Goodbye and', true],
    ]);
    const events = await outbox(call.id);
    expect(events.map((e) => e.type)).toEqual(['call.started', 'call.transcript.updated', 'call.ended', 'call.transcript.updated']);
    // call.ended counted the turns stored when the call ended.
    expect(events.find((e) => e.type === 'call.ended')?.data).toMatchObject({ turns: 1, end_reason: 'hangup' });

    const afterGrace = new Date(ended.endedAt!.getTime() + TRANSCRIPT_GRACE_MS + 1);
    await expect(
      calls.appendTurn('acc_1', call.id, { role: 'user', text: 'too late', language: '', startMs: 2000, endMs: 2100, interrupted: false }, afterGrace),
    ).rejects.toMatchObject({ code: 'conflict', message: 'The call has ended; its transcript is closed.' });
    expect((await calls.transcript('acc_1', call.id)).turns).toHaveLength(2);
  });

  it('stores a retried append of the same stream turn once, with one call.transcript.updated', async () => {
    const call = await calls.insert(newCall());
    await calls.transition('acc_1', call.id, () => ({ status: 'in_progress' }));
    const first = { role: 'user' as const, text: 'Hello?', language: 'en-US', startMs: 0, endMs: 800, interrupted: false, stream: { id: 'MZ1', seq: 1 } };
    const second = { role: 'assistant' as const, text: 'Hi, Ada here.', language: 'en-US', startMs: 1200, endMs: 2400, interrupted: false, stream: { id: 'MZ1', seq: 2 } };
    expect(await calls.appendTurn('acc_1', call.id, first)).toBe(1);
    // The first attempt was stored but its answer missed the deadline: the worker sends it again, then goes on.
    expect(await calls.appendTurn('acc_1', call.id, first)).toBe(1);
    expect(await calls.appendTurn('acc_1', call.id, second)).toBe(2);
    expect(await calls.appendTurn('acc_1', call.id, second)).toBe(2);
    // Another stream of the same call (a transfer that did not connect) numbers its turns afresh.
    expect(await calls.appendTurn('acc_1', call.id, { ...first, text: 'Still there?', startMs: 9000, endMs: 9600, stream: { id: 'MZ2', seq: 1 } })).toBe(3);

    const { call: after, turns } = await calls.transcript('acc_1', call.id);
    expect(after.turns).toBe(3);
    expect(turns.map((t) => [t.seq, t.text, t.streamId, t.streamSeq])).toEqual([
      [1, 'Hello?', 'MZ1', 1],
      [2, 'Hi, Ada here.', 'MZ1', 2],
      [3, 'Still there?', 'MZ2', 1],
    ]);
    const updates = (await outbox(call.id)).filter((e) => e.type === 'call.transcript.updated');
    expect(updates.map((e) => (e.data as { text: string }).text)).toEqual(['Hello?', 'Hi, Ada here.', 'Still there?']);
    await calls.transition('acc_1', call.id, () => ({ status: 'ended', endReason: 'completed' }));
  });

  it('stamps a new call with the database clock, as stored, and returns it as it reads back', async () => {
    const [{ before }] = await dataSource.query(`SELECT now() AS before`);
    const call = await calls.insert(newCall({ variables: { name: 'Ada' }, metadata: { crm: '42' }, idempotencyKey: 'key-stamp' }));
    const [{ after }] = await dataSource.query(`SELECT now() AS after`);

    expect(call.createdAt.getTime()).toBeGreaterThanOrEqual(new Date(before).getTime() - 1);
    expect(call.createdAt.getTime()).toBeLessThanOrEqual(new Date(after).getTime() + 1);
    expect(call.updatedAt).toEqual(call.createdAt);
    expect(await calls.get('acc_1', call.id)).toEqual(call);
    await calls.transition('acc_1', call.id, () => ({ status: 'ended', endReason: 'canceled' }));
  });

  it('keeps other accounts out of a call and its transcript', async () => {
    const call = await calls.insert(newCall());
    await expect(calls.transcript('acc_2', call.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(calls.appendTurn('acc_2', call.id, { role: 'user', text: 'x', language: '', startMs: 0, endMs: 1, interrupted: false })).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('records a ready recording and tells webhooks where to fetch it', async () => {
    const call = await calls.insert(newCall());
    const after = await calls.recordingReady('acc_1', call.id, `recordings/acc_1/${call.id}.wav`, 'audio/wav', 12.5);
    expect(after).toMatchObject({ recordingAvailable: true, recordingKey: `recordings/acc_1/${call.id}.wav`, recordingDurationSeconds: 12.5 });
    const ready = (await outbox(call.id)).find((e) => e.type === 'call.recording.ready');
    expect(ready?.data).toEqual({ recording_url: `https://parley.example/v1/calls/${call.id}/recording`, content_type: 'audio/wav', duration_seconds: 12.5 });
  });

  it('lets media keep a quiet call alive and fails one that has neither progress nor media', async () => {
    const quiet = await calls.insert(newCall());
    const stuck = await calls.insert(newCall());
    await dataSource.query(`UPDATE calls SET updated_at = now() - interval '2 minutes' WHERE id IN ($1, $2)`, [quiet.id, stuck.id]);
    await calls.touchMedia('acc_1', quiet.id);
    await calls.failStuckCalls();
    expect((await calls.get('acc_1', quiet.id)).status).toBe('queued');
    expect(await calls.get('acc_1', stuck.id)).toMatchObject({ status: 'failed', endReason: 'no_media' });
  });

  it('finds a call by the carrier’s id and refuses a second call with the same carrier id', async () => {
    const call = await calls.insert(newCall({ carrierCallId: 'CA123', direction: 'inbound', status: 'ringing' }));
    expect((await calls.findByCarrierCall('twilio', 'CA123'))?.id).toBe(call.id);
    expect(await calls.findByCarrierCall('twilio', 'CA999')).toBeUndefined();
    await expect(calls.insert(newCall({ carrierCallId: 'CA123' }))).rejects.toThrow();
  });

  it('stores each move of the flow in order, merges what it captured into the call’s variables as text, and tells event streams once per move', async () => {
    const call = await calls.insert(newCall({ accountId: 'acc_flow', variables: { customer: 'Ada', plan: 'basic' } }));
    await calls.transition('acc_flow', call.id, () => ({ status: 'in_progress' }));
    const start = { from: '', to: 'greet', kind: 'start' as const, edge_index: -1, at_ms: 0 };
    const qualified = {
      from: 'greet',
      to: 'offer',
      kind: 'intent' as const,
      edge_index: 1,
      when: 'The caller wants to upgrade',
      captured: { plan: 'pro', seats: 12, annual: true },
      at_ms: 5250,
    };
    const paid = { from: 'offer', to: 'thanks', kind: 'event' as const, edge_index: 0, event: 'payment_received', captured: { annual: false }, at_ms: 9100 };

    await calls.flowTransitioned('acc_flow', call.id, start, { id: 'MZ1', seq: 1 });
    await calls.flowTransitioned('acc_flow', call.id, qualified, { id: 'MZ1', seq: 3 });
    // The report was stored but its answer missed the deadline: the worker sends it again.
    await calls.flowTransitioned('acc_flow', call.id, qualified, { id: 'MZ1', seq: 3 });
    await calls.flowTransitioned('acc_flow', call.id, paid, { id: 'MZ1', seq: 5 });

    const { call: after, transitions } = await calls.transcript('acc_flow', call.id);
    expect(transitions).toEqual([start, qualified, paid]);
    expect(after.variables).toEqual({ customer: 'Ada', plan: 'pro', seats: '12', annual: 'false' });
    const moves = heard.filter((a): a is Extract<CallActivity, { kind: 'flow' }> => a.kind === 'flow' && a.call_id === call.id);
    expect(moves.map((a) => a.transition)).toEqual([start, qualified, paid]);
    // Not a webhook event: nothing in the outbox beyond the call's own.
    expect((await outbox(call.id)).map((e) => e.type)).toEqual(['call.started']);
    await expect(calls.flowTransitioned('acc_other', call.id, paid)).rejects.toMatchObject({ code: 'not_found' });
    await calls.transition('acc_flow', call.id, () => ({ status: 'ended', endReason: 'completed' }));
  });

  it('hands an injected event to the worker holding the call’s stream, and says when it reached observers only', async () => {
    const call = await calls.insert(newCall({ accountId: 'acc_inject' }));
    await calls.transition('acc_inject', call.id, () => ({ status: 'in_progress' }));

    // No stream attached yet: broadcast, not delivered.
    const early = await calls.inject('acc_inject', call.id, 'payment_received', { amount: 42 });
    expect(early.delivered).toBe(false);
    expect(workers.about(call.id)).toEqual([]);

    await calls.attachMedia('acc_inject', call.id, '10.0.9.1:50053');
    const { injected, delivered } = await calls.inject('acc_inject', call.id, 'payment_received', { amount: 42, order: { id: 'o_1' } });
    expect(delivered).toBe(true);
    expect(workers.about(call.id)).toEqual([
      {
        address: '10.0.9.1:50053',
        command: 'inject_event',
        req: { call_id: call.id, event_id: injected.id, name: 'payment_received', payload_json: '{"amount":42,"order":{"id":"o_1"}}' },
      },
    ]);
    expect(heard.filter((a) => a.kind === 'injected' && a.call_id === call.id).map((a) => a.kind === 'injected' && a.injected.id)).toEqual([early.injected.id, injected.id]);

    // The worker cannot be reached: the event still reached the call's event stream.
    workers.gone.add('10.0.9.1:50053');
    expect((await calls.inject('acc_inject', call.id, 'payment_failed', {})).delivered).toBe(false);
    expect(heard.filter((a) => a.kind === 'injected' && a.call_id === call.id)).toHaveLength(3);
    await calls.transition('acc_inject', call.id, () => ({ status: 'ended', endReason: 'completed' }));
  });

  it('keeps an event injected with no stream attached and hands it to the next stream that attaches, once, in order', async () => {
    const call = await calls.insert(newCall({ accountId: 'acc_keep' }));
    await calls.transition('acc_keep', call.id, () => ({ status: 'in_progress' }));

    const paid = await calls.inject('acc_keep', call.id, 'payment_received', { amount: 42 });
    const shipped = await calls.inject('acc_keep', call.id, 'shipped', { order: { id: 'o_1' }, items: ['a', 'b'] });
    expect([paid.delivered, shipped.delivered]).toEqual([false, false]);

    expect(await calls.attachMedia('acc_keep', call.id, '10.0.9.2:50053')).toEqual([paid.injected, shipped.injected]);
    // A second stream (a resume after a transfer that did not connect) gets none of them again.
    expect(await calls.attachMedia('acc_keep', call.id, '10.0.9.2:50053')).toEqual([]);
    await calls.transition('acc_keep', call.id, () => ({ status: 'ended', endReason: 'completed' }));
  });

  it('does not keep an event the worker took, and keeps one the worker could not be reached for', async () => {
    const call = await calls.insert(newCall({ accountId: 'acc_keep' }));
    await calls.transition('acc_keep', call.id, () => ({ status: 'in_progress' }));
    expect(await calls.attachMedia('acc_keep', call.id, '10.0.9.3:50053')).toEqual([]);

    expect((await calls.inject('acc_keep', call.id, 'payment_received', { amount: 42 })).delivered).toBe(true);
    workers.gone.add('10.0.9.3:50053');
    const missed = await calls.inject('acc_keep', call.id, 'payment_failed', {});
    expect(missed.delivered).toBe(false);
    workers.gone.delete('10.0.9.3:50053');

    expect(await calls.attachMedia('acc_keep', call.id, '10.0.9.4:50053')).toEqual([missed.injected]);
    await calls.transition('acc_keep', call.id, () => ({ status: 'ended', endReason: 'completed' }));
  });

  it('puts an injected payload’s fields on the call’s variables as the conversation sees them, delivered or not, while the call is live', async () => {
    const call = await calls.insert(newCall({ accountId: 'acc_vars', variables: { name: 'Ada', amount: '1' } }));
    await calls.transition('acc_vars', call.id, () => ({ status: 'in_progress' }));

    await calls.inject('acc_vars', call.id, 'payment_received', { amount: 42, order: { id: 'o_1', lines: [{ sku: 's1' }] }, paid: true, note: 'ok', gone: null });
    expect((await calls.get('acc_vars', call.id)).variables).toEqual({
      name: 'Ada',
      amount: '42',
      'order.id': 'o_1',
      'order.lines': '[{"sku":"s1"}]',
      paid: 'true',
      note: 'ok',
    });
    await calls.attachMedia('acc_vars', call.id, '10.0.9.5:50053');
    expect((await calls.inject('acc_vars', call.id, 'refunded', { amount: 0 })).delivered).toBe(true);
    expect((await calls.get('acc_vars', call.id)).variables).toMatchObject({ amount: '0', 'order.id': 'o_1' });

    await calls.transition('acc_vars', call.id, () => ({ status: 'ended', endReason: 'completed' }));
    await expect(calls.inject('acc_vars', call.id, 'late', { amount: 7 })).rejects.toMatchObject({ code: 'conflict' });
    expect((await calls.get('acc_vars', call.id)).variables).toMatchObject({ amount: '0' });
  });

  it('records a call an answering machine took, carried on (voicemail continue), as ended by voicemail', async () => {
    const call = await calls.insert(newCall({ accountId: 'acc_vm' }));
    await calls.transition('acc_vm', call.id, () => ({ status: 'in_progress' }));
    await calls.amend('acc_vm', call.id, (c) => {
      c.answeredBy = 'machine';
      return [];
    });
    const ended = await calls.transition('acc_vm', call.id, () => ({ status: 'ended', endReason: 'completed' }));
    expect(ended).toMatchObject({ endReason: 'voicemail', answeredBy: 'machine' });
  });

  it('records one call for creates racing with one Idempotency-Key, and refuses the others as still running', async () => {
    const creates = await Promise.allSettled([1, 2, 3].map(() => calls.insert(newCall({ accountId: 'acc_key', idempotencyKey: 'race-1' }))));
    expect(creates.filter((c) => c.status === 'fulfilled')).toHaveLength(1);
    const refusals = creates.flatMap((c) => (c.status === 'rejected' ? [c.reason] : []));
    expect(refusals).toEqual([expect.objectContaining({ code: 'idempotency_conflict' }), expect.objectContaining({ code: 'idempotency_conflict' })]);
  });
});
