import { DataSource } from 'typeorm';
import { ServiceConfig } from '@parley/config';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { defaultProjectId, openServiceDatabase } from '@parley/persistence';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallAnalytics } from './call-analytics';
import { CallAnalyticsRepository } from './call-analytics.repository';
import { CallUsage } from './call-usage';
import { CallUsageRepository } from './call-usage.repository';
import { CallsDomain, toCallMessage } from './calls.domain';
import { CallsRepository } from './calls.repository';
import { CallEntity, CallTurnEntity } from './entities';
import { CALLS_MIGRATIONS } from './migrations';
import { parsePrices } from './price-table';
import { FakeMediaWorkers } from './testing/fake-media-workers';
import { newCall } from './testing/new-call';
import { CreateProjectSpend1765900000700, ProjectSpendStatementTriggers1765900000710 } from './project-spend.migrations';
import { periodEnd, periodStart } from './spend-periods';

const config = Object.assign(new ServiceConfig(), { MAX_CONCURRENT_CALLS: 50, CALL_STUCK_SECONDS: 60, PUBLIC_URL: 'https://parley.example' });

const prices = parsePrices({
  currency: 'EUR',
  carrier: { twilio: '0.014', '*': 0.02 },
  stt: { deepgram: '0.0059', 'deepgram/nova-3': '0.0077' },
  llm: { 'gpt-4o-mini': { input: 0.15, output: '0.6' } },
  tts: { elevenlabs: '30' },
});

describe('usage and cost (real PostgreSQL)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let bus: InProcessBus;
  let relay: OutboxRelay;
  let calls: CallsDomain;
  let usage: CallUsage;
  let analytics: CallAnalytics;

  beforeAll(async () => {
    db = await createTestDatabase('parley_calls');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    bus = new InProcessBus();
    bus.open();
    relay = new OutboxRelay(dataSource, bus);
    usage = new CallUsage(new CallUsageRepository(dataSource), prices);
    calls = new CallsDomain(new CallsRepository(dataSource), relay, bus, config, new FakeMediaWorkers().commands, usage);
    analytics = new CallAnalytics(new CallAnalyticsRepository(dataSource));
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
  });

  /** An answered call, its answer moved `secondsAgo` into the past (the carrier's minutes count from it). */
  const answered = async (secondsAgo: number, over: Parameters<typeof newCall>[0] = {}) => {
    const call = await calls.insert(newCall(over));
    await calls.transition(call.accountId, call.id, () => ({ status: 'in_progress' }));
    await dataSource.query(`UPDATE calls.calls SET answered_at = now() - make_interval(secs => $2) WHERE id = $1`, [call.id, secondsAgo]);
    return call;
  };
  const report = (callId: string, stream: string, lines: [string, string, string, number][], account = 'acc_1') =>
    usage.record(
      account,
      callId,
      stream,
      lines.map(([kind, provider, model, quantity]) => ({ kind, provider, model, quantity })),
    );

  it('prices each line by the most specific key, keeps the largest running total per stream and line, and adds the carrier’s started minutes at the end', async () => {
    const call = await answered(61);
    await report(call.id, 'MZ1', [
      ['stt_ms', 'deepgram', 'nova-2', 60_000],
      ['llm_input_tokens', 'openai', 'gpt-4o-mini', 1000],
      ['llm_output_tokens', 'openai', 'gpt-4o-mini', 150],
      ['tts_characters', 'elevenlabs', 'eleven_flash_v2_5', 400],
    ]);
    // Later totals of the same stream; then a retried older report, which lowers nothing.
    await report(call.id, 'MZ1', [
      ['stt_ms', 'deepgram', 'nova-2', 90_000],
      ['llm_output_tokens', 'openai', 'gpt-4o-mini', 200],
      ['tts_characters', 'elevenlabs', 'eleven_flash_v2_5', 500],
    ]);
    await report(call.id, 'MZ1', [['stt_ms', 'deepgram', 'nova-2', 60_000]]);
    // A second stream of the same call (after a transfer back): its own lines, added; nova-3 has its own price.
    const live = await report(call.id, 'MZ2', [['stt_ms', 'deepgram', 'nova-3', 30_000]]);

    // stt 90 s × 0.0059/min + 30 s × 0.0077/min; llm 1000 × 0.15/M + 200 × 0.6/M; tts 500 × 30/M; no carrier yet.
    expect(live).toMatchObject({ costStt: '0.0127000000', costLlm: '0.0002700000', costTts: '0.0150000000', costCarrier: '0', cost: '0.0279700000', costCurrency: 'EUR' });

    const ended = await calls.transition('acc_1', call.id, () => ({ status: 'ended', endReason: 'completed' }));
    const message = toCallMessage(ended);
    expect(message.usage).toEqual({
      carrier_seconds: expect.closeTo(61, 0),
      carrier_minutes: 2,
      stt_seconds: 120,
      llm_input_tokens: 1000,
      llm_output_tokens: 200,
      tts_characters: 500,
    });
    // The carrier: 2 started minutes × 0.014.
    expect(message.cost).toEqual({ amount: '0.05597', currency: 'EUR', carrier: '0.028', stt: '0.0127', llm: '0.00027', tts: '0.015' });
    expect(toCallMessage(await calls.get('acc_1', call.id)).cost).toEqual(message.cost);
  });

  it('refuses a report with an unknown kind or a negative quantity, and one for another account’s call, storing nothing', async () => {
    const call = await answered(5);
    await expect(report(call.id, 'MZ9', [['stt_seconds', 'deepgram', '', 10]])).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(report(call.id, 'MZ9', [['stt_ms', 'deepgram', '', -1]])).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(report(call.id, 'MZ9', [['stt_ms', 'deepgram', '', 10]], 'acc_other')).rejects.toMatchObject({ code: 'not_found' });
    expect(await dataSource.query(`SELECT count(*)::int AS n FROM calls.call_usage WHERE call_id = $1`, [call.id])).toEqual([{ n: 0 }]);
  });

  it('charges an unanswered call nothing for the carrier, and an unpriced vendor 0 (the `*` carrier price for an unlisted carrier)', async () => {
    const never = await calls.insert(newCall());
    const ended = await calls.transition('acc_1', never.id, () => ({ status: 'ended', endReason: 'no_answer' }));
    expect(toCallMessage(ended).cost).toMatchObject({ amount: '0', carrier: '0', currency: 'EUR' });

    const other = await answered(30, { carrier: 'dev' });
    await report(other.id, 'dev-1', [['tts_characters', 'local', 'mespeak', 1000]]);
    const done = await calls.transition('acc_1', other.id, () => ({ status: 'ended', endReason: 'completed' }));
    expect(toCallMessage(done).cost).toMatchObject({ amount: '0.02', carrier: '0.02', tts: '0' });
  });

  it('spendOf: an account’s costs over a period, a live call’s carrier minutes so far included, by project and agent on request', async () => {
    const from = new Date(Date.now() - 60_000);
    const a = await answered(10, { accountId: 'acc_spend', agentId: 'agt_x' });
    await report(a.id, 'S1', [['tts_characters', 'elevenlabs', '', 1000]], 'acc_spend');
    await calls.transition('acc_spend', a.id, () => ({ status: 'ended', endReason: 'completed' }));
    // Live, answered 90 s ago: 2 started minutes at 0.014 so far.
    await answered(90, { accountId: 'acc_spend', agentId: 'agt_y', projectId: 'prj_sales' });
    const to = new Date(Date.now() + 60_000);

    expect(await usage.spendOf({ accountId: 'acc_spend', from, to })).toEqual({ amount: '0.072', currency: 'EUR' });
    expect(await usage.spendOf({ accountId: 'acc_spend', from, to, agentId: 'agt_x' })).toEqual({ amount: '0.044', currency: 'EUR' });
    expect(await usage.spendOf({ accountId: 'acc_spend', from, to, projectId: 'prj_sales' })).toEqual({ amount: '0.028', currency: 'EUR' });
    expect(await usage.spendOf({ accountId: 'acc_spend', from: to, to: new Date(to.getTime() + 1000) })).toEqual({ amount: '0', currency: 'EUR' });
  });

  describe('a project’s running total of spend (project_spend)', () => {
    const PROJECT = `prj_${'7'.repeat(22)}`;
    const ACCOUNT = 'acc_running';
    /** The running total as CreateCall reads it, and the re-sum of the period's calls (spendOf), for each period. */
    const both = async (projectId: string) =>
      Promise.all(
        (['day', 'month'] as const).map(async (period) => {
          const from = periodStart(period, new Date());
          return {
            period,
            running: (await usage.projectSpend(dataSource.manager, ACCOUNT, projectId, period, from)).amount,
            resummed: (await usage.spendOf({ accountId: ACCOUNT, projectId, from, to: periodEnd(period, from) })).amount,
          };
        }),
      );

    it('equals the re-sum of the period’s call costs after many concurrent usage reports and ends, live carrier minutes included', async () => {
      const made = await Promise.all(
        Array.from({ length: 12 }, (_, i) => answered(5, { accountId: ACCOUNT, ...(i % 3 ? { projectId: PROJECT } : {}) })),
      );
      // Each call's streams report growing running totals, all at once and out of order; half the calls end meanwhile.
      await Promise.all([
        ...made.flatMap((call, c) =>
          ['S1', 'S2'].flatMap((stream) =>
            [5, 1, 4, 2, 3].map((step) =>
              report(
                call.id,
                stream,
                [
                  ['stt_ms', 'deepgram', 'nova-3', step * 7_000 + c],
                  ['llm_input_tokens', 'openai', 'gpt-4o-mini', step * 333],
                  ['tts_characters', 'elevenlabs', '', step * 17 + c],
                ],
                ACCOUNT,
              ),
            ),
          ),
        ),
        ...made.filter((_, c) => c % 2).map((call) => calls.transition(ACCOUNT, call.id, () => ({ status: 'ended', endReason: 'completed' }))),
      ]);

      for (const projectId of [PROJECT, defaultProjectId(ACCOUNT)]) {
        const totals = await both(projectId);
        for (const t of totals) expect(t.running).toBe(t.resummed);
        expect(Number(totals[0].running)).toBeGreaterThan(0);
      }
    });

    it('follows calls written in bulk: inserted with their costs, then deleted, one statement each', async () => {
      await dataSource.query(
        `INSERT INTO calls.calls (id, account_id, agent_id, direction, to_number, from_number, status, created_at, updated_at, cost, project_id)
         SELECT 'call_bulk' || lpad(i::text, 18, '0'), $1, 'agt_bulk', 'outbound', '+15550001111', '+15550002222', 'ended', now(), now(), i * 0.0001, $2
           FROM generate_series(1, 500) i`,
        [ACCOUNT, PROJECT],
      );
      for (const t of await both(PROJECT)) expect(t.running).toBe(t.resummed);
      await dataSource.query(`DELETE FROM calls.calls WHERE id LIKE 'call_bulk%'`);
      for (const t of await both(PROJECT)) expect(t.running).toBe(t.resummed);
    });

    it('is filled in from the calls stored before it by the migration', async () => {
      const before = await both(PROJECT);
      const runner = dataSource.createQueryRunner();
      try {
        await runner.query(`TRUNCATE project_spend`);
        // The table's migration fills it in; the next one puts its final triggers back.
        await new CreateProjectSpend1765900000700().up(runner);
        await new ProjectSpendStatementTriggers1765900000710().up(runner);
      } finally {
        await runner.release();
      }
      expect(await both(PROJECT)).toEqual(before);
    });
  });

  it('keeps each agent turn’s response latency and barge-in, and the overview reports cost, latency percentiles and barge-ins', async () => {
    const call = await answered(20, { accountId: 'acc_an' });
    const turn = (role: 'user' | 'assistant', interrupted = false, responseLatencyMs?: number) =>
      calls.appendTurn('acc_an', call.id, { role, text: 'x', language: 'en-US', startMs: 0, endMs: 1, interrupted, ...(responseLatencyMs ? { responseLatencyMs } : {}) });
    await turn('assistant'); // the greeting: no latency
    await turn('user');
    await turn('assistant', false, 700);
    await turn('user');
    await turn('assistant', true, 900);
    await turn('user');
    await turn('assistant', false, 1500);
    await turn('assistant', false, 820);
    await report(call.id, 'A1', [['llm_output_tokens', 'openai', 'gpt-4o-mini', 1_000_000]], 'acc_an');
    await calls.transition('acc_an', call.id, () => ({ status: 'ended', endReason: 'completed' }));

    const { turns } = await calls.transcript('acc_an', call.id);
    expect(turns.filter((t) => t.role === 'assistant').map((t) => [t.responseLatencyMs, t.interrupted])).toEqual([
      [null, false],
      [700, false],
      [900, true],
      [1500, false],
      [820, false],
    ]);
    const overview = await analytics.overview({ accountId: 'acc_an', from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 60_000).toISOString() });
    // Latencies 700, 820, 900, 1500: p50 = (820 + 900) / 2; p95 at rank 2.85 = 900 + 0.85 × 600 (as percentile_cont).
    expect(overview).toMatchObject({ calls: 1, agentTurns: 5, bargeIns: 1, latencyTurns: 4, latencyP50: 860, cost: '0.614' });
    expect(overview.latencyP95).toBeCloseTo(1410, 6);
    const [{ p95 }] = (await dataSource.query(
      `SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY response_latency_ms) AS p95 FROM calls.call_turns WHERE account_id = 'acc_an'`,
    )) as { p95: number }[];
    expect(overview.latencyP95).toBeCloseTo(Number(p95), 6);

    const buckets = await analytics.timeseries(
      { accountId: 'acc_an', from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 60_000).toISOString() },
      'day',
      'UTC',
    );
    // Within an hour after midnight UTC the window spans two days: the call is in today's, the last bucket.
    const bucket = buckets[buckets.length - 1];
    expect(bucket).toMatchObject({ calls: 1, cost: '0.614', agentTurns: 5, bargeIns: 1 });
  });

  it('filters the analytics by project: a call stored without a project counts as the account’s default project’s', async () => {
    const sales = await answered(10, { accountId: 'acc_prj', projectId: 'prj_sales' });
    await answered(10, { accountId: 'acc_prj' });
    await report(sales.id, 'P1', [['tts_characters', 'elevenlabs', '', 10_000]], 'acc_prj');
    await calls.recordRating('acc_prj', sales.id, { source: 'api', scale: 5, score: 4 });
    await calls.appendTurn('acc_prj', sales.id, { role: 'assistant', text: 'x', language: 'en-US', startMs: 0, endMs: 1, interrupted: false, responseLatencyMs: 640 });
    const period = { accountId: 'acc_prj', from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 60_000).toISOString() };

    expect(await analytics.overview({ ...period, projectId: 'prj_sales' })).toMatchObject({ calls: 1, cost: '0.3', csatCount: 1, csatAverage: 4, latencyTurns: 1, latencyP50: 640 });
    expect(await analytics.overview({ ...period, projectId: defaultProjectId('acc_prj') })).toMatchObject({ calls: 1, cost: '0', csatCount: 0, latencyTurns: 0 });
    expect(await analytics.overview({ ...period, projectId: 'prj_other' })).toMatchObject({ calls: 0, csatCount: 0 });
    const buckets = await analytics.timeseries({ ...period, projectId: 'prj_sales' }, 'hour', 'UTC');
    expect(buckets.reduce((n, b) => n + b.calls, 0)).toBe(1);
  });
});
