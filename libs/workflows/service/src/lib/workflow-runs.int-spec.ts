import { TestClock } from 'pg-boss';
import { DataSource } from 'typeorm';
import { ServiceConfig } from '@parley/config';
import { AgentDocument, LIVE, RunCounts, WebhookEvent, WorkflowRunActivity, WorkflowSpec, workflowsV1 } from '@parley/contracts';
import { InProcessBus, OutboxRelay } from '@parley/messaging';
import { AppError } from '@parley/rpc';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { AgentsPort } from './agents-port';
import { CallOutcomes } from './call-outcomes';
import { RunDispatcher } from './dispatcher';
import { DISPATCH_QUEUE, PgBossJobs } from './job-engine';
import { RunEvents } from './run-events';
import { FakeCalls, PlacedCall } from './testing/fake-calls';
import { toRecipientMessage } from './presenters';
import { WorkflowsDomain } from './workflows.domain';
import { openWorkflowsDatabase } from './workflows.module';
import { WorkflowsRepository } from './workflows.repository';

const AGENT = 'agt_caller';
const agents: AgentsPort = {
  agent: async (_a, id) =>
    id === AGENT
      ? ({ name: 'Caller', languages: [{ code: 'en-US' }], post_call: { extraction: [{ name: 'renewed', description: 'Did they renew?', type: 'boolean' }] } } as AgentDocument)
      : undefined,
};
const ALWAYS_OPEN = { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '23:59' } as WorkflowSpec['calling_window'];

/** One replica of the calls deployable's workflows part: its own pg-boss, sharing the database and the calls. */
interface Replica {
  jobs: PgBossJobs;
  dispatcher: RunDispatcher;
  outcomes: CallOutcomes;
  domain: WorkflowsDomain;
}

jest.setTimeout(60_000);

describe('workflow runs (real PostgreSQL, pg-boss, a test clock)', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let repo: WorkflowsRepository;
  let clock: TestClock;
  let calls: FakeCalls;
  let config: ServiceConfig;
  let bus: InProcessBus;
  let relay: OutboxRelay;
  let replicas: Replica[];
  let account = 0;
  let accountId: string;

  /** The replica whose next call hangs for ever (it is then killed mid-call). */
  let hangIn: string | undefined;
  /** Which replica placed the call to each number. */
  const placedBy = new Map<string, string>();

  async function replica(name: string): Promise<Replica> {
    // Two workers taking up to 4 due jobs each: batches, and a second worker while one is stuck.
    const jobs = new PgBossJobs({ connectionString: db.url, concurrency: 8, batchSize: 4, clock });
    const events = new RunEvents(repo, relay, bus);
    const port = {
      createCall: async (r: Parameters<FakeCalls['createCall']>[0]) => {
        if (hangIn === name) {
          hangIn = undefined;
          await new Promise(() => undefined);
        }
        placedBy.set(r.to, name);
        return calls.createCall(r);
      },
      doNotCall: (a: string, n: string[]) => calls.doNotCall(a, n),
    };
    const dispatcher = new RunDispatcher(repo, events, jobs, port, clock, config);
    const outcomes = new CallOutcomes(repo, events, dispatcher, jobs, clock, config);
    const domain = new WorkflowsDomain(repo, events, dispatcher, jobs, port, agents, clock, config);
    await jobs.work((batch) => dispatcher.dispatch(batch));
    return { jobs, dispatcher, outcomes, domain };
  }

  beforeAll(async () => {
    db = await createTestDatabase('parley_workflows');
    ds = await openWorkflowsDatabase(db.url);
    repo = new WorkflowsRepository(ds);
    bus = new InProcessBus();
    // Never started: the events stay in the outbox, where the tests read them.
    relay = new OutboxRelay(ds, bus, { service: 'workflows' });
    clock = new TestClock('2026-03-02T15:00:00Z');
    config = Object.assign(new ServiceConfig(), { MAX_CONCURRENT_CALLS: 10, WORKFLOW_RESERVED_CALLS: 2, WORKFLOW_ANALYSIS_WAIT_SECONDS: 900 });
    calls = new FakeCalls();
    replicas = [await replica('first')];
  }, 60_000);

  afterAll(async () => {
    // The dead replica's handler never returns: no graceful stop.
    for (const r of replicas) await r.jobs.engine.stop({ graceful: false, close: true }).catch(() => undefined);
    await ds.destroy();
    await db.drop();
  });

  beforeEach(() => {
    accountId = `acct_${++account}`;
    calls = new FakeCalls();
  });

  const domain = () => replicas[0].domain;
  const outcomes = () => replicas[0].outcomes;

  async function workflow(spec: Partial<WorkflowSpec> = {}): Promise<string> {
    const w = await domain().createWorkflow(accountId, JSON.stringify({ name: 'Campaign', agent_id: AGENT, calling_window: ALWAYS_OPEN, ...spec }));
    return w.id;
  }

  async function run(workflowId: string, recipients: unknown[], extra: Partial<workflowsV1.StartRunRequest> = {}) {
    return domain().startRun(accountId, {
      account_id: accountId,
      workflow_id: workflowId,
      recipients: { recipients_json: JSON.stringify(recipients), recipients_csv: '' },
      start_at: '',
      recipients_complete: true,
      metadata: {},
      ...extra,
    });
  }

  /**
   * Moves the test clock (pg-boss's polls fire on the way, every half second) and lets the work they started run.
   * Each test sets a later date than the one before: moved back, the clock would leave pg-boss's polls in its future.
   */
  async function advance(ms: number): Promise<void> {
    await clock.tick(ms);
    await new Promise((r) => setTimeout(r, 20));
  }

  /** Advances the clock half a second at a time until `probe` holds (at most `maxMs` of clock time). */
  async function until(probe: () => boolean | Promise<boolean>, what: string, maxMs = 30_000): Promise<void> {
    for (let waited = 0; waited <= maxMs; waited += 500) {
      if (await probe()) return;
      await advance(500);
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  async function recipients(workflowId: string, runId: string) {
    const page = await domain().listRecipients(accountId, { account_id: accountId, workflow_id: workflowId, run_id: runId, state: '', limit: 100, after: '' }, 100);
    return page.items.map(toRecipientMessage);
  }

  async function counts(runId: string): Promise<RunCounts> {
    return repo.countsOf(ds.manager, runId);
  }

  async function events(runId: string): Promise<WebhookEvent[]> {
    const rows: { payload: WebhookEvent }[] = await ds.query(`SELECT payload FROM outbox ORDER BY seq`);
    return rows.map((r) => r.payload).filter((e) => (e.data as { run_id?: string }).run_id === runId);
  }

  async function end(call: PlacedCall, reason: string): Promise<void> {
    await outcomes().callEnded(calls.end(call, reason));
  }

  it('calls each recipient within the calling window of its own time zone, across the US change to daylight time', async () => {
    await clock.setTime('2026-03-06T23:30:00Z'); // Friday: 18:30 in New York (closed), 23:30 in London (closed)
    const wf = await workflow({ calling_window: { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '17:00' }, timezone: 'America/New_York' });
    const { run: r } = await run(wf, [{ to: '+14155550101' }, { to: '+442071838750', timezone: 'Europe/London' }]);
    await until(async () => (await recipients(wf, r.id)).every((x) => x.next_attempt_at !== '2026-03-06T23:30:00.000Z'), 'the window check');

    const due = Object.fromEntries((await recipients(wf, r.id)).map((x) => [x.to, x.next_attempt_at]));
    // Monday 09:00: in London still GMT; in New York already EDT (UTC-4 since Sunday 8 March), not EST.
    expect(due).toEqual({ '+442071838750': '2026-03-09T09:00:00.000Z', '+14155550101': '2026-03-09T13:00:00.000Z' });
    expect(calls.placed).toHaveLength(0);

    await clock.setTime('2026-03-09T09:00:00Z');
    await until(() => calls.placed.length === 1, 'the London call');
    expect(calls.placed[0].request.to).toBe('+442071838750');
    await advance(3_000);
    expect(calls.placed).toHaveLength(1);

    await clock.setTime('2026-03-09T13:00:00Z');
    await until(() => calls.placed.length === 2, 'the New York call');
    expect(calls.placed[1].request).toMatchObject({ to: '+14155550101', agent_id: AGENT, workflow_run_id: r.id, account_id: accountId });
  });

  it('retries by outcome after exactly the policy’s wait, then fails when the retries are spent', async () => {
    await clock.setTime('2026-03-16T10:00:00Z');
    const wf = await workflow({ retry: { busy: { retries: 1, wait_seconds: 600 }, no_answer: { retries: 0, wait_seconds: 60 } } });
    const { run: r } = await run(wf, [{ to: '+14155550111' }, { to: '+14155550112' }, { to: '+14155550113' }]);
    const live: WorkflowRunActivity[] = [];
    const stopListening = await bus.listen(LIVE.workflowRun(r.id).name, (activity) => live.push(activity as WorkflowRunActivity));
    await until(() => calls.placed.length === 3, 'three first calls');

    const [busy, answered, unanswered] = ['+14155550111', '+14155550112', '+14155550113'].map((to) => calls.callsTo(to)[0]);
    const endedAt = clock.now();
    await end(busy, 'busy');
    await end(answered, 'completed');
    await end(unanswered, 'no_answer');
    const byNumber = async () => Object.fromEntries((await recipients(wf, r.id)).map((x) => [x.to, x]));
    expect((await byNumber())['+14155550111']).toMatchObject({ state: 'retrying', attempts: 1, last_outcome: 'busy', next_attempt_at: new Date(endedAt + 600_000).toISOString() });
    expect((await byNumber())['+14155550112']).toMatchObject({ state: 'succeeded', attempts: 1 });
    expect((await byNumber())['+14155550113']).toMatchObject({ state: 'failed', attempts: 1, reason: 'no_answer', last_outcome: 'no_answer' });

    await advance(599_000);
    expect(calls.callsTo('+14155550111')).toHaveLength(1);
    await until(() => calls.callsTo('+14155550111').length === 2, 'the retry', 3_000);
    const retry = calls.callsTo('+14155550111')[1];
    expect(retry.request.idempotency_key).toBe(`workflow:${(await byNumber())['+14155550111'].id}:2`);

    await end(retry, 'busy');
    expect((await byNumber())['+14155550111']).toMatchObject({ state: 'failed', attempts: 2, reason: 'busy', call_ids: [busy.id, retry.id] });
    await until(async () => (await repo.getRunById(ds.manager, r.id))?.status === 'completed', 'the run’s completion');
    const completed = (await events(r.id)).filter((e) => e.type === 'workflow_run.completed');
    expect(completed).toHaveLength(1);
    expect(completed[0].data).toMatchObject({ status: 'completed', counts: { total: 3, succeeded: 1, failed: 2 } });
    expect((await events(r.id)).filter((e) => e.type === 'workflow_run.recipient.finished')).toHaveLength(3);
    // The run's event stream hears each event, the run after each recipient's end, and the run as it ends.
    stopListening();
    expect(live.filter((a) => a.kind === 'run')).toHaveLength(3);
    expect(live.filter((a) => a.kind === 'event').map((a) => (a.kind === 'event' ? a.event.type : ''))).toEqual([
      ...Array(3).fill('workflow_run.recipient.finished'),
      'workflow_run.completed',
    ]);
    expect(live.at(-1)).toMatchObject({ kind: 'run', run: { status: 'completed', counts: { succeeded: 1, failed: 2 } } });
  });

  it('never has more calls live than the run’s concurrency, nor than the account’s lines less the reserve', async () => {
    await clock.setTime('2026-03-23T10:00:00Z');
    config.MAX_CONCURRENT_CALLS = 6; // 6 less the 2 reserved: 4 lines for workflows
    try {
      const first = await workflow({ concurrency: 3 });
      const second = await workflow({ concurrency: 5 });
      const numbers = (base: number) => Array.from({ length: 8 }, (_, i) => ({ to: `+1415555${String(base + i).padStart(4, '0')}` }));
      const { run: a } = await run(first, numbers(1000));
      const { run: b } = await run(second, numbers(2000));
      await until(() => calls.live().length === 4, 'four live calls');
      await advance(2_000);
      expect(calls.live()).toHaveLength(4);
      expect(calls.live().filter((c) => c.request.workflow_run_id === a.id).length).toBeLessThanOrEqual(3);

      for (let ended = 0; ended < 16; ended++) {
        await until(() => calls.live().length > 0, 'a live call');
        await end(calls.live()[0], 'completed');
        await advance(1_000);
        const perRun = (id: string) => calls.live().filter((c) => c.request.workflow_run_id === id).length;
        expect(calls.live().length).toBeLessThanOrEqual(4);
        expect(perRun(a.id)).toBeLessThanOrEqual(3);
      }
      expect(calls.placed).toHaveLength(16);
      expect(calls.peakLive).toBe(4);
      expect(await counts(a.id)).toMatchObject({ total: 8, succeeded: 8 });
      expect(await counts(b.id)).toMatchObject({ total: 8, succeeded: 8 });
    } finally {
      config.MAX_CONCURRENT_CALLS = 10;
    }
  });

  it('pauses (live calls go on, nothing new), resumes, and cancels what is not yet final', async () => {
    await clock.setTime('2026-03-30T10:00:00Z');
    const wf = await workflow({ concurrency: 1 });
    const { run: r } = await run(wf, ['+14155550121', '+14155550122', '+14155550123', '+14155550124'].map((to) => ({ to })));
    await until(() => calls.placed.length === 1, 'the first call');

    await expect(domain().resumeRun(accountId, wf, r.id)).rejects.toMatchObject({ code: 'conflict' });
    expect((await domain().pauseRun(accountId, wf, r.id)).status).toBe('paused');
    await end(calls.placed[0], 'completed');
    await advance(5_000);
    expect(calls.placed).toHaveLength(1);

    expect((await domain().resumeRun(accountId, wf, r.id)).status).toBe('running');
    await until(() => calls.placed.length === 2, 'the call after the resume');

    const cancelled = await domain().cancelRun(accountId, wf, r.id);
    expect(cancelled.status).toBe('cancelled');
    await advance(5_000);
    expect(calls.placed).toHaveLength(2);
    // The live call goes on; its outcome is still recorded.
    await end(calls.placed[1], 'completed');
    expect(await counts(r.id)).toMatchObject({ total: 4, succeeded: 2, cancelled: 2, pending: 0 });
    const completed = (await events(r.id)).filter((e) => e.type === 'workflow_run.completed');
    expect(completed.map((e) => e.data)).toEqual([expect.objectContaining({ status: 'cancelled' })]);
    await expect(domain().cancelRun(accountId, wf, r.id)).rejects.toMatchObject({ code: 'conflict' });
  });

  it('suppresses duplicates, invalid numbers, numbers on the do-not-call list and recipients missing a variable, with reasons', async () => {
    await clock.setTime('2026-04-06T10:00:00Z');
    calls.doNotCallList.add('+14155550133');
    const wf = await workflow({ recipient_variables: [{ name: 'first_name', required: true }] });
    const ok = (to: string) => ({ to, variables: { first_name: 'Ada' } });
    const { run: r, added, suppressed } = await run(wf, [ok('+14155550131'), ok('+1 (415) 555-0131'), { to: 'call me', variables: { first_name: 'x' } }, ok('+14155550133'), { to: '+14155550134' }], {
      recipients_complete: false,
    });
    expect({ added, suppressed }).toEqual({ added: 1, suppressed: 4 });
    const more = await domain().addRecipients(accountId, {
      account_id: accountId,
      workflow_id: wf,
      run_id: r.id,
      recipients: { recipients_json: '', recipients_csv: 'to,first_name\n+14155550131,Ada\n+14155550135,Grace\n' },
      complete: true,
    });
    expect(more).toMatchObject({ added: 1, suppressed: 1 });
    const reasons = (await recipients(wf, r.id)).filter((x) => x.state === 'suppressed').map((x) => x.reason).sort();
    expect(reasons).toEqual(['do_not_call', 'duplicate', 'duplicate', 'invalid_number', 'invalid_variables']);
    await until(() => calls.placed.length === 2, 'the two callable recipients');
    expect(calls.placed.map((c) => c.request.variables)).toEqual([{ first_name: 'Ada' }, { first_name: 'Grace' }]);
    await expect(
      domain().addRecipients(accountId, { account_id: accountId, workflow_id: wf, run_id: r.id, recipients: { recipients_json: '[]', recipients_csv: '' }, complete: true }),
    ).rejects.toMatchObject({ code: 'conflict' });
  });

  it('decides success by the post-call extracted field, and fails a recipient whose analysis never comes', async () => {
    await clock.setTime('2026-04-09T10:00:00Z');
    await expect(workflow({ success: { extracted_field: { name: 'churn_risk' } } })).rejects.toMatchObject({
      code: 'validation_error',
      errors: [{ field: 'success.extracted_field.name', message: expect.stringContaining('post_call.extraction') }],
    });
    const wf = await workflow({ success: { end_reasons: ['completed'], extracted_field: { name: 'renewed', equals: true } } });
    const { run: r } = await run(wf, ['+14155550151', '+14155550152', '+14155550153'].map((to) => ({ to })));
    await until(() => calls.placed.length === 3, 'three calls');
    const [renewed, declined, unanalysed] = calls.placed;
    for (const c of calls.placed) await end(c, 'completed');
    const state = async (to: string) => (await recipients(wf, r.id)).find((x) => x.to === to);
    expect(await state(renewed.request.to)).toMatchObject({ state: 'in_progress' });

    const analysed = (c: PlacedCall, extracted: Record<string, unknown>): WebhookEvent<'call.analysed'> => ({
      ...calls.end(c, 'completed'),
      type: 'call.analysed',
      data: { summary: null, extracted, model: 'm', successful: null },
    });
    await outcomes().callAnalysed(analysed(renewed, { renewed: true }));
    await outcomes().callAnalysed(analysed(declined, { renewed: false }));
    expect(await state(renewed.request.to)).toMatchObject({ state: 'succeeded' });
    expect(await state(declined.request.to)).toMatchObject({ state: 'failed', reason: 'not_successful' });

    await advance(899_000);
    expect(await state(unanalysed.request.to)).toMatchObject({ state: 'in_progress' });
    await until(async () => (await state(unanalysed.request.to))?.state === 'failed', 'the analysis wait to run out', 5_000);
    expect(await state(unanalysed.request.to)).toMatchObject({ reason: 'analysis_missing' });
    await until(async () => (await repo.getRunById(ds.manager, r.id))?.status === 'completed', 'the run’s completion');
    expect(calls.placed).toHaveLength(3);
  });

  it('waits and tries again, without spending an attempt, when the calls service refuses for now', async () => {
    await clock.setTime('2026-04-13T10:00:00Z');
    calls.refusals.push(new AppError('plan_limit_reached', 'ceiling'));
    const wf = await workflow();
    const { run: r } = await run(wf, [{ to: '+14155550141' }]);
    await until(async () => (await recipients(wf, r.id))[0].next_attempt_at === '2026-04-13T10:00:05.000Z', 'the wait after the refusal');
    expect(calls.placed).toHaveLength(0);
    await until(() => calls.placed.length === 1, 'the call after the wait', 10_000);
    expect((await recipients(wf, r.id))[0]).toMatchObject({ state: 'in_progress', attempts: 1 });
    expect(calls.placed[0].request.idempotency_key).toMatch(/:1$/);
  });

  it('takes lines for many recipients due at once in batches, never more than the run’s concurrency, and calls each once', async () => {
    await clock.setTime('2026-04-16T10:00:00Z');
    const wf = await workflow({ concurrency: 3 });
    const numbers = Array.from({ length: 24 }, (_, i) => `+1415555${String(4000 + i).padStart(4, '0')}`);
    const { run: r } = await run(wf, numbers.map((to) => ({ to })));
    // Each batch of due jobs is decided together: those past the run's 3 lines wait, and are woken as calls end.
    for (let round = 0; round < 8; round++) {
      await until(() => calls.live().length === 3, `three live calls (round ${round + 1})`);
      await advance(1_000);
      expect(calls.live()).toHaveLength(3);
      for (const c of calls.live()) await end(c, 'completed');
    }
    await advance(2_000);
    expect(calls.placed).toHaveLength(24);
    expect(calls.peakLive).toBe(3);
    for (const n of numbers) expect(calls.callsTo(n)).toHaveLength(1);
    expect(calls.placed.map((c) => c.request.idempotency_key)).toEqual(calls.placed.map((c) => `workflow:${c.request.workflow_recipient_id}:1`));
    expect(await counts(r.id)).toMatchObject({ total: 24, succeeded: 24 });
  });

  it('never calls a recipient twice nor loses one when a replica dies holding a call it was placing', async () => {
    await clock.setTime('2026-04-20T10:00:00Z');
    const wf = await workflow({ concurrency: 10 });
    const numbers = Array.from({ length: 5 }, (_, i) => `+1415555${String(3000 + i).padStart(4, '0')}`);
    hangIn = 'first';
    const { run: r } = await run(wf, numbers.map((to) => ({ to })));
    await until(() => calls.placed.length === 4 && hangIn === undefined, 'four calls placed and one hanging');

    // The replica is dead to the others: its job stays active (its line taken, the recipient `dialing`) and it takes
    // no more work. Another replica starts; pg-boss expires the job after its expireInSeconds and retries it there.
    await replicas[0].jobs.engine.offWork(DISPATCH_QUEUE, { wait: false });
    replicas.push(await replica('second'));
    await advance(60_000);
    expect(calls.placed).toHaveLength(4);
    await until(() => calls.placed.length === 5, 'the last call, placed once pg-boss expired the dead replica’s job', 300_000);
    expect(placedBy.get(calls.placed[4].request.to)).toBe('second');
    await advance(10_000);
    for (const n of numbers) expect(calls.callsTo(n)).toHaveLength(1);
    expect((await recipients(wf, r.id)).map((x) => [x.state, x.attempts])).toEqual(numbers.map(() => ['in_progress', 1]));
  }, 180_000);
});
