import { DataSource } from 'typeorm';
import { CallActivity, LIVE, WebhookEvent } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallsDomain } from './calls.domain';
import { CallsRepository } from './calls.repository';
import { CallEntity, CallTurnEntity } from './entities';
import { CALLS_MIGRATIONS } from './migrations';
import { FakeMediaWorkers } from './testing/fake-media-workers';
import { newCall } from './testing/new-call';

const config = Object.assign(new ServiceConfig(), { MAX_CONCURRENT_CALLS: 50, CALL_STUCK_SECONDS: 60, PUBLIC_URL: 'https://parley.example' });

describe('satisfaction ratings (real PostgreSQL)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let bus: InProcessBus;
  let calls: CallsDomain;
  let relay: OutboxRelay;
  const heard: CallActivity[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('parley_calls');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    bus = new InProcessBus();
    bus.open();
    await bus.listen(LIVE.callActivity('*').name, (p) => void heard.push(p as CallActivity));
    relay = new OutboxRelay(dataSource, bus);
    calls = new CallsDomain(new CallsRepository(dataSource), relay, bus, config, new FakeMediaWorkers().commands);
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
  });

  const csatEvents = async (callId: string) =>
    ((await dataSource.getRepository(OutboxRecord).find({ order: { createdAt: 'ASC' } })) as OutboxRecord[])
      .map((r) => r.payload as WebhookEvent)
      .filter((e) => e.call_id === callId && e.type === 'csat.received');

  const endedCall = async () => {
    const call = await calls.insert(newCall());
    await calls.transition('acc_1', call.id, () => ({ status: 'in_progress' }));
    await calls.transition('acc_1', call.id, () => ({ status: 'ended', endReason: 'completed' }));
    return call;
  };

  it('records a rating once and enqueues csat.received with it, in the same transaction', async () => {
    const call = await endedCall();
    const { rating, created } = await calls.recordRating('acc_1', call.id, { source: 'api', score: 4, comment: 'Quick and clear.' });
    expect(created).toBe(true);
    expect(rating).toMatchObject({ callId: call.id, accountId: 'acc_1', source: 'api', scale: 5, score: 4, comment: 'Quick and clear.' });
    expect(rating.id).toMatch(/^csat_/);
    const events = await csatEvents(call.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'csat.received',
      call_id: call.id,
      account_id: 'acc_1',
      agent_id: 'agt_1',
      data: { rating_id: rating.id, rating: 4, score: 4, scale: 5, source: 'api', comment: 'Quick and clear.' },
    });
    expect(heard.some((a) => a.kind === 'event' && a.event.call_id === call.id && a.event.type === 'csat.received')).toBe(true);
  });

  it('answers the same rating again with the stored one and no second event (idempotent per call and source)', async () => {
    const call = await endedCall();
    const first = await calls.recordRating('acc_1', call.id, { source: 'api', scale: 10, score: 7 });
    const again = await calls.recordRating('acc_1', call.id, { source: 'api', scale: 10, score: 7, comment: '' });
    expect(again.created).toBe(false);
    expect(again.rating).toEqual(first.rating);
    const events = await csatEvents(call.id);
    expect(events).toHaveLength(1);
    // 7 of 10, brought to 1..5; no comment: none in the event.
    expect(events[0].data).toEqual({ rating_id: first.rating.id, rating: 3.67, score: 7, scale: 10, source: 'api' });
  });

  it('keeps one rating per source: another source rates the same call on its own', async () => {
    const call = await endedCall();
    await calls.recordRating('acc_1', call.id, { source: 'keypad', score: 5 });
    const web = await calls.recordRating('acc_1', call.id, { source: 'web', score: 2 });
    expect(web.created).toBe(true);
    expect((await csatEvents(call.id)).map((e) => (e.data as { source: string }).source)).toEqual(['keypad', 'web']);
  });

  it('refuses a different rating from the same source with 409 conflict, keeping the first', async () => {
    const call = await endedCall();
    const first = await calls.recordRating('acc_1', call.id, { source: 'api', score: 3 });
    await expect(calls.recordRating('acc_1', call.id, { source: 'api', score: 5 })).rejects.toMatchObject({ code: 'conflict' });
    await expect(calls.recordRating('acc_1', call.id, { source: 'api', score: 3, comment: 'changed my mind' })).rejects.toMatchObject({ code: 'conflict' });
    await expect(calls.recordRating('acc_1', call.id, { source: 'api', scale: 10, score: 3 })).rejects.toMatchObject({ code: 'conflict' });
    expect((await calls.recordRating('acc_1', call.id, { source: 'api', score: 3 })).rating).toEqual(first.rating);
    expect(await csatEvents(call.id)).toHaveLength(1);
  });

  it('records one rating and one event when the same rating arrives twice at once', async () => {
    const call = await endedCall();
    const both = await Promise.all([0, 1].map(() => calls.recordRating('acc_1', call.id, { source: 'keypad', score: 2 })));
    expect(both.map((r) => r.created).sort()).toEqual([false, true]);
    expect(both[0].rating.id).toBe(both[1].rating.id);
    expect(await csatEvents(call.id)).toHaveLength(1);
  });

  it('takes a rating while the call is live (an end-of-call survey)', async () => {
    const call = await calls.insert(newCall());
    await calls.transition('acc_1', call.id, () => ({ status: 'in_progress' }));
    expect((await calls.recordRating('acc_1', call.id, { source: 'keypad', score: 5 })).created).toBe(true);
  });

  it('answers 404 not_found for a call of another account (or none), storing nothing', async () => {
    const call = await endedCall();
    await expect(calls.recordRating('acc_2', call.id, { source: 'api', score: 4 })).rejects.toMatchObject({ code: 'not_found' });
    await expect(calls.recordRating('acc_1', 'call_doesnotexist', { source: 'api', score: 4 })).rejects.toMatchObject({ code: 'not_found' });
    expect(await csatEvents(call.id)).toHaveLength(0);
    const [{ n }] = await dataSource.query(`SELECT count(*)::int AS n FROM calls.call_ratings WHERE call_id = $1`, [call.id]);
    expect(n).toBe(0);
  });

  it.each([
    ['score 0', { source: 'api', score: 0 }, 'score'],
    ['score 6 of 5', { source: 'api', score: 6 }, 'score'],
    ['score 11 of 10', { source: 'api', scale: 10, score: 11 }, 'score'],
    ['score 2.5', { source: 'api', score: 2.5 }, 'score'],
    ['scale 7', { source: 'api', scale: 7, score: 3 }, 'scale'],
    ['source sms', { source: 'sms', score: 3 }, 'source'],
    ['a comment of 1001 characters', { source: 'api', score: 3, comment: 'x'.repeat(1001) }, 'comment'],
  ])('refuses %s with a validation error on its field, storing nothing', async (_label, input, field) => {
    const call = await endedCall();
    await expect(calls.recordRating('acc_1', call.id, input)).rejects.toMatchObject({ code: 'validation_error', errors: [expect.objectContaining({ field })] });
    expect(await csatEvents(call.id)).toHaveLength(0);
  });
});
