import { ClientGrpc } from '@nestjs/microservices';
import { DataSource } from 'typeorm';
import { FakeTwilioServer, signedTwilioWebhook } from '@parley/carrier-twilio';
import { ServiceConfig } from '@parley/config';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
// eslint-disable-next-line @nx/enforce-module-boundaries -- test-only helper for a fresh database
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallAdmission } from './call-admission';
import { CallControl } from './call-control';
import { CallReaper } from './call-reaper';
import { CallsDomain } from './calls.domain';
import { CallsRepository } from './calls.repository';
import { CarrierReconciler } from './carrier-reconciler';
import { CarrierRegistry } from './carrier-registry';
import { CallEntity, CallTurnEntity } from './entities';
import { CALLS_MIGRATIONS } from './migrations';
import { FakeMediaWorkers } from './testing/fake-media-workers';

/**
 * The calls service's recovery loops on a real PostgreSQL against a fake Twilio: the reaper (media worker gone,
 * nothing happening) and the carrier reconciler (status callbacks that never arrived).
 */
describe('recovering calls: reaper and carrier reconciliation (real PostgreSQL, fake Twilio)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let relay: OutboxRelay;
  let calls: CallsDomain;
  const workers = new FakeMediaWorkers();
  let carriers: CarrierRegistry;
  let control: CallControl;
  let reaper: CallReaper;
  let reconciler: CarrierReconciler;
  const twilio = new FakeTwilioServer();
  const config = new ServiceConfig();

  beforeAll(async () => {
    Object.assign(config, {
      SECRET_KEY: 'x'.repeat(40),
      ...(await twilio.platformEnv()),
      PUBLIC_URL: 'https://parley.example',
      MEDIA_LOST_SECONDS: 30,
      CALL_STUCK_SECONDS: 120,
      CARRIER_RECONCILE_SECONDS: 60,
      CARRIER_RECONCILE_BATCH: 2,
    });
    db = await createTestDatabase('parley_recovery');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    const bus = new InProcessBus();
    bus.open();
    relay = new OutboxRelay(dataSource, bus);
    const repository = new CallsRepository(dataSource);
    calls = new CallsDomain(repository, relay, bus, config, workers.commands);
    carriers = CarrierRegistry.fromConfig(config);
    // No agents RPC is needed: status callbacks and carrier look-ups never read the agent.
    control = new CallControl(calls, carriers, { getService: () => ({}) } as unknown as ClientGrpc, config, new CallAdmission(bus, repository, config));
    reaper = new CallReaper(calls, carriers);
    reconciler = new CarrierReconciler(repository, control, carriers, config);
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
    await twilio.stop();
  });

  /** A call dialled at the fake Twilio and recorded `status`; its carrier leg's sid. */
  async function dialled(status: 'queued' | 'ringing' | 'in_progress'): Promise<{ call: CallEntity; sid: string }> {
    const placed = await carriers.pick('twilio')!.placeCall({
      to: '+15550100000',
      from: '+15550009999',
      streamUrl: 'wss://media.parley.example/streams/twilio',
      streamToken: 't',
      statusCallbackUrl: 'https://parley.example/carriers/twilio/status',
    });
    let call = await calls.insert({
      accountId: 'acc_1',
      agentId: 'agt_1',
      direction: 'outbound',
      to: '+15550100000',
      from: '+15550009999',
      status: 'queued',
      carrier: 'twilio',
      carrierCallId: placed.carrierCallId,
      recordingEnabled: false,
      variables: {},
      metadata: {},
    });
    if (status !== 'queued') call = await calls.transition('acc_1', call.id, () => ({ status }));
    return { call, sid: placed.carrierCallId };
  }

  /** Moves a call's clocks back, as if `seconds` had passed on the database's clock. */
  async function age(id: string, seconds: { updated?: number; media?: number; checked?: number }): Promise<void> {
    await dataSource.query(
      `UPDATE calls SET updated_at = now() - make_interval(secs => $2),
                        last_media_at = CASE WHEN $3::float IS NULL THEN last_media_at ELSE now() - make_interval(secs => $3) END,
                        carrier_checked_at = CASE WHEN $4::float IS NULL THEN carrier_checked_at ELSE now() - make_interval(secs => $4) END
        WHERE id = $1`,
      [id, seconds.updated ?? 0, seconds.media ?? null, seconds.checked ?? null],
    );
  }

  const events = async (callId: string) =>
    ((await dataSource.getRepository(OutboxRecord).find({ order: { createdAt: 'ASC' } })) as OutboxRecord[])
      .filter((r) => r.subject.startsWith('parley.events.'))
      .map((r) => r.payload as { type: string; call_id: string; data: Record<string, unknown> })
      .filter((e) => e.call_id === callId);

  const fetchesOf = (sid: string) => twilio.calls.filter((c) => c.action === 'fetch' && c.callSid === sid).length;

  describe('the reaper', () => {
    it('fails an answered call whose media worker stopped beating as media_lost and hangs its carrier leg up', async () => {
      const { call, sid } = await dialled('in_progress');
      twilio.setCallStatus(sid, 'in-progress');
      await age(call.id, { updated: 45, media: 31 });

      const failed = await reaper.runPass();

      expect(failed.map((c) => c.id)).toContain(call.id);
      expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'failed', endReason: 'media_lost', failureReason: expect.stringContaining('media worker') });
      const sent = await events(call.id);
      expect(sent.map((e) => e.type)).toEqual(['call.started', 'call.failed', 'call.ended']);
      expect(sent[1].data).toMatchObject({ reason: 'media_lost' });
      expect(sent[2].data).toMatchObject({ end_reason: 'media_lost' });
      expect(twilio.calls.some((c) => c.action === 'update' && c.callSid === sid && c.form['Status'] === 'completed')).toBe(true);
    });

    /** Runs `work` with this replica's clock (Date) `skewMs` off the database's; timers stay real. */
    async function onSkewedClock<T>(skewMs: number, work: () => Promise<T>): Promise<T> {
      jest.useFakeTimers({
        now: Date.now() + skewMs,
        doNotFake: ['nextTick', 'setImmediate', 'clearImmediate', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'queueMicrotask', 'hrtime', 'performance'],
      });
      try {
        return await work();
      } finally {
        jest.useRealTimers();
      }
    }
    const reaped = async () => (await reaper.runPass()).map((c) => c.id);

    it('judges heartbeats on the database’s clock, whatever this replica’s clock says', async () => {
      const beating = await dialled('in_progress');
      const silent = await dialled('in_progress');
      await age(beating.call.id, { updated: 3600, media: 20 });
      await age(silent.call.id, { updated: 3600, media: 31 });

      expect(await onSkewedClock(-3_600_000, reaped)).toEqual([silent.call.id]);
      expect(await onSkewedClock(3_600_000, reaped)).toEqual([]);
      expect((await calls.get('acc_1', beating.call.id)).status).toBe('in_progress');
      expect((await calls.get('acc_1', silent.call.id)).endReason).toBe('media_lost');
    });

    it('never reaps a call a replica whose clock is behind just placed or changed: its times are the database’s', async () => {
      const { call } = await onSkewedClock(-3_600_000, async () => {
        const placed = await dialled('queued');
        await calls.transition('acc_1', placed.call.id, () => ({ status: 'ringing' }));
        return placed;
      });

      expect(await reaped()).not.toContain(call.id);
      const [row]: { behind: number }[] = await dataSource.query(`SELECT extract(epoch FROM now() - updated_at) AS behind FROM calls WHERE id = $1`, [call.id]);
      expect(Math.abs(Number(row.behind))).toBeLessThan(60);
    });

    it('goes on with the rest of the pass when one call cannot be failed', async () => {
      const poisoned = await dialled('ringing');
      const stuck = await dialled('ringing');
      await age(poisoned.call.id, { updated: 200 });
      await age(stuck.call.id, { updated: 190 });
      // A real failure inside the poisoned call's transaction: the database refuses to change that row.
      await dataSource.query(`
        CREATE FUNCTION refuse_poisoned() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF OLD.id = '${poisoned.call.id}' THEN RAISE EXCEPTION 'row refused'; END IF; RETURN NEW; END $$`);
      await dataSource.query(`CREATE TRIGGER refuse_poisoned BEFORE UPDATE ON calls FOR EACH ROW EXECUTE FUNCTION refuse_poisoned()`);
      try {
        const failed = await reaper.runPass();

        expect(failed.map((c) => c.id)).toEqual([stuck.call.id]);
        expect((await calls.get('acc_1', poisoned.call.id)).status).toBe('ringing');
        expect(await calls.get('acc_1', stuck.call.id)).toMatchObject({ status: 'failed', endReason: 'no_media' });
      } finally {
        await dataSource.query(`DROP TRIGGER refuse_poisoned ON calls; DROP FUNCTION refuse_poisoned()`);
      }
      await reaper.runPass();
      expect((await calls.get('acc_1', poisoned.call.id)).status).toBe('failed');
    });
  });

  describe('the carrier reconciler', () => {
    it('records the outcome of a call whose status callback never arrived, through the callback’s path, once', async () => {
      const { call, sid } = await dialled('ringing');
      twilio.setCallStatus(sid, 'no-answer'); // Twilio's callback was refused during an outage: never delivered
      await age(call.id, { updated: 61 });

      await reconciler.runPass();

      expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'ended', endReason: 'no_answer' });
      expect((await events(call.id)).map((e) => e.type)).toEqual(['call.ended']);

      // Twilio retries the callback later: it changes nothing and adds no event.
      const url = 'https://parley.example/carriers/twilio/status';
      const late = signedTwilioWebhook(url, twilio.statusCallbackParams(sid, 'no-answer'), twilio.authToken);
      await control.handleWebhook({ carrier: 'twilio', kind: 'status', url, headers: late.headers, params: late.params, agent_id: '' });
      expect((await events(call.id)).map((e) => e.type)).toEqual(['call.ended']);
    });

    it('answers a call the carrier says was answered, and later ends it as the carrier did', async () => {
      const { call, sid } = await dialled('queued');
      twilio.setCallStatus(sid, 'in-progress');
      await age(call.id, { updated: 61 });
      await reconciler.runPass();
      expect((await calls.get('acc_1', call.id)).status).toBe('in_progress');

      twilio.setCallStatus(sid, 'completed');
      await age(call.id, { updated: 61, checked: 61 });
      await reconciler.runPass();

      expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'ended', endReason: 'completed' });
      expect((await events(call.id)).map((e) => e.type)).toEqual(['call.started', 'call.ended']);
    });

    it('looks up neither a call that moved recently, nor one whose media beats, nor one looked up within the period', async () => {
      const recent = await dialled('ringing');
      const streaming = await dialled('in_progress');
      const checked = await dialled('ringing');
      await age(streaming.call.id, { updated: 600, media: 5 });
      await age(checked.call.id, { updated: 600, checked: 30 });

      await reconciler.runPass();

      expect([fetchesOf(recent.sid), fetchesOf(streaming.sid), fetchesOf(checked.sid)]).toEqual([0, 0, 0]);
    });

    it('looks up at most CARRIER_RECONCILE_BATCH calls per pass, oldest first, and a still-ringing call again only after the period', async () => {
      const due = [await dialled('ringing'), await dialled('ringing'), await dialled('ringing')];
      for (const [i, d] of due.entries()) await age(d.call.id, { updated: 300 - i });

      await reconciler.runPass();
      expect(due.map((d) => fetchesOf(d.sid))).toEqual([1, 1, 0]);
      await reconciler.runPass();
      expect(due.map((d) => fetchesOf(d.sid))).toEqual([1, 1, 1]);
      await reconciler.runPass();
      expect(due.map((d) => fetchesOf(d.sid))).toEqual([1, 1, 1]);
      expect(await Promise.all(due.map(async (d) => (await calls.get('acc_1', d.call.id)).status))).toEqual(['ringing', 'ringing', 'ringing']);
    });

    it('ends a pass at the carrier’s rate limit and leaves the call for a later one', async () => {
      const { call, sid } = await dialled('ringing');
      twilio.setCallStatus(sid, 'busy');
      await age(call.id, { updated: 10_000 });
      twilio.failNext({ status: 429, code: 20429, message: 'Too Many Requests' });

      await reconciler.runPass();
      expect((await calls.get('acc_1', call.id)).status).toBe('ringing');

      await age(call.id, { updated: 10_000, checked: 61 });
      await reconciler.runPass();
      expect(await calls.get('acc_1', call.id)).toMatchObject({ status: 'ended', endReason: 'busy' });
    });
  });
});
