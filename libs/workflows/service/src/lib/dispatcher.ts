import { Inject, Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { ServiceConfig } from '@parley/config';
import { WorkflowSpec } from '@parley/contracts';
import { serviceLogger } from '@parley/observability';
import { AppError } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { CALLS_PORT, CallsPort } from './calls-port';
import { nextCallableTime } from './calling-window';
import { DispatchJob, WORKFLOW_JOBS, WorkflowJobs } from './job-engine';
import { workflowMetrics } from './metrics';
import { PendingEvents, RunEvents } from './run-events';
import { WORKFLOW_CLOCK, WorkflowClock } from './workflow-clock';
import { RecipientRecord, RunRecord, WorkflowsRepository } from './workflows.repository';

/** How long a recipient waits before trying again when the calls service refused for now (ceiling, overload). */
export const BUSY_LINES_RETRY_MS = 5_000;

type Placement = { recipient: RecipientRecord; run: RunRecord; spec: WorkflowSpec; dueAt: Date };
const DONE: PromiseFulfilledResult<void> = { status: 'fulfilled', value: undefined };

/**
 * Handles dispatch jobs, several at a time: decides from each recipient's row whether its call is placed now, later,
 * or never, and places it. Everything that decides is done in one transaction under the recipients' row locks (and,
 * to take lines, one line lock per account); the calls are placed after it commits with the Idempotency-Key
 * `workflow:<recipient>:<attempt>`, so a job that runs again after a crash (the recipient still `dialing`) gets
 * the same call back from the calls service and never places a second one.
 */
@Injectable()
export class RunDispatcher {
  private readonly log = serviceLogger('workflow-dispatch');

  constructor(
    private readonly repository: WorkflowsRepository,
    private readonly events: RunEvents,
    @Inject(WORKFLOW_JOBS) private readonly jobs: WorkflowJobs,
    @Inject(CALLS_PORT) private readonly calls: CallsPort,
    @Inject(WORKFLOW_CLOCK) private readonly clock: WorkflowClock,
    @Inject(CONFIG) private readonly config: ServiceConfig,
  ) {}

  /**
   * Dispatches due recipients together: one transaction decides them all (one line lock and one count per account,
   * one update for those that get a line), then their calls are placed concurrently. Answers per job, in order: a
   * job whose call could not be placed (an unknown outcome) is retried on its own, under the same Idempotency-Key.
   */
  async dispatch(jobs: DispatchJob[]): Promise<PromiseSettledResult<void>[]> {
    const pending = new PendingEvents();
    const ids = [...new Set(jobs.map((j) => j.recipient_id))];
    const placements = await this.repository.transaction((m) => this.decide(m, ids, pending));
    await this.published(pending);
    const placed = await this.placeAll(placements);
    return jobs.map((j) => placed.get(j.recipient_id) ?? DONE);
  }

  private async decide(m: EntityManager, ids: string[], pending: PendingEvents): Promise<Placement[]> {
    const now = new Date(this.clock.now());
    // Runs before recipients, as a pause or cancel locks them (the run, then its recipients).
    const contexts = new Map<string, { run: RunRecord; spec: WorkflowSpec }>();
    for (const runId of await this.repository.runsOf(m, ids)) {
      const context = await this.context(m, runId, now, pending);
      if (context) contexts.set(runId, context);
    }
    const placements: Placement[] = [];
    const wanting: Placement[] = [];
    for (const r of await this.repository.lockDispatchable(m, ids)) {
      const context = contexts.get(r.runId);
      if (!context) continue;
      const { run, spec } = context;
      // A crash between taking the line and recording the call: place it again (same key, same call).
      if (r.state === 'dialing') placements.push({ recipient: r, run, spec, dueAt: r.dueAt ?? now });
      else if (r.state === 'analysing') await this.analysisOverdue(m, r, run, spec, now, pending);
      else if (await this.callableNow(m, r, run, spec, now, pending)) wanting.push({ recipient: r, run, spec, dueAt: r.dueAt ?? now });
    }
    return [...placements, ...(await this.takeLines(m, wanting, now))];
  }

  /**
   * Whether a due recipient (`pending`, `retrying`) is to be called now; otherwise records why not: its run is over
   * (cancelled), paused (waiting for the resume), or its calling window is closed (due again at its opening).
   */
  private async callableNow(m: EntityManager, r: RecipientRecord, run: RunRecord, spec: WorkflowSpec, now: Date, pending: PendingEvents): Promise<boolean> {
    if (run.status === 'cancelled' || run.status === 'completed') {
      // Its retry was scheduled as the run was cancelled.
      const cancelled: RecipientRecord = { ...r, state: 'cancelled', dueAt: null, reason: 'run_cancelled' };
      await this.repository.updateRecipient(m, r.id, { state: 'cancelled', dueAt: null, reason: 'run_cancelled' }, now);
      await this.events.recipientFinished(m, pending, run, spec.agent_id, cancelled, now);
      return false;
    }
    // An earlier job of a recipient moved later since (a calling window): the later job will come.
    if (r.dueAt && r.dueAt.getTime() > now.getTime()) return false;
    if (run.status === 'paused') {
      await this.repository.markWaiting(m, [r.id], now);
      return false;
    }
    const opens = nextCallableTime(spec.calling_window, r.timezone, now);
    if (opens.getTime() > now.getTime()) {
      await this.repository.updateRecipient(m, r.id, { dueAt: opens }, now);
      await this.jobs.schedule(m, [{ recipientId: r.id, at: opens }]);
      return false;
    }
    return true;
  }

  /**
   * Gives lines to due recipients, oldest due first, within their run's concurrency and their account's lines: per
   * account, under its line lock, one count of the lines in use and one update for those that get one (`dialing`,
   * the attempt counted); the others wait (`waiting`) to be woken as lines free.
   */
  private async takeLines(m: EntityManager, wanting: Placement[], now: Date): Promise<Placement[]> {
    const taken: Placement[] = [];
    const accounts = [...new Set(wanting.map((w) => w.recipient.accountId))].sort();
    for (const accountId of accounts) {
      await this.repository.lockAccountLines(m, accountId);
      const perRun = await this.repository.linesByRun(m, accountId);
      let inUse = [...perRun.values()].reduce((sum, n) => sum + n, 0);
      const waiting: string[] = [];
      const candidates = wanting
        .filter((w) => w.recipient.accountId === accountId)
        .sort((x, y) => x.dueAt.getTime() - y.dueAt.getTime() || Number(BigInt(x.recipient.seq) - BigInt(y.recipient.seq)));
      for (const w of candidates) {
        const run = perRun.get(w.run.id) ?? 0;
        if (run >= (w.spec.concurrency ?? 1) || inUse >= this.accountLines()) {
          waiting.push(w.recipient.id);
          continue;
        }
        perRun.set(w.run.id, run + 1);
        inUse += 1;
        taken.push({ ...w, recipient: { ...w.recipient, state: 'dialing', attempt: w.recipient.attempt + 1 } });
      }
      await this.repository.takeLines(
        m,
        taken.filter((t) => t.recipient.accountId === accountId).map((t) => t.recipient.id),
        now,
      );
      await this.repository.markWaiting(m, waiting, now);
    }
    return taken;
  }

  /**
   * The run and workflow recipients are dispatched under, the run share-locked; starts a scheduled run whose time has
   * come. Undefined when the run or its workflow is gone.
   */
  private async context(m: EntityManager, runId: string, now: Date, pending: PendingEvents): Promise<{ run: RunRecord; spec: WorkflowSpec } | undefined> {
    // A scheduled run whose time has come is started BEFORE the run is locked FOR SHARE: a dispatch holding the share
    // lock that then asked for the row's exclusive lock (the UPDATE) would wait on every other dispatch doing the same
    // at the start instant, a deadlock PostgreSQL breaks one transaction at a time while new dispatches take share
    // locks again (bench/workflows.mjs, 2,000 recipients due at once: twice no call was placed for minutes, the
    // pool held by the waiters and GET …/runs/{id} timing out).
    const seen = await this.repository.getRunById(m, runId);
    if (!seen) return undefined;
    const workflow = await this.repository.getWorkflow(seen.accountId, seen.workflowId, m);
    if (!workflow) return undefined;
    const spec = workflow.spec;
    if (seen.status === 'scheduled' && seen.startAt.getTime() <= now.getTime()) {
      const started = await this.repository.startRun(m, seen.id, now);
      if (started) {
        await this.events.record(m, pending, started, spec.agent_id, 'workflow_run.started', { workflow_id: started.workflowId, run_id: started.id, counts: await this.repository.countsOf(m, started.id) }, now);
      }
    }
    const run = await this.repository.lockRunShared(m, runId);
    if (!run) return undefined;
    return { run, spec };
  }

  /** A recipient whose success waits for the call's analysis, which never came in time: failed. */
  private async analysisOverdue(m: EntityManager, r: RecipientRecord, run: RunRecord, spec: WorkflowSpec, now: Date, pending: PendingEvents): Promise<undefined> {
    if (!r.dueAt || r.dueAt.getTime() > now.getTime()) return undefined;
    const failed: RecipientRecord = { ...r, state: 'failed', dueAt: null, reason: 'analysis_missing' };
    await this.repository.updateRecipient(m, r.id, { state: 'failed', dueAt: null, reason: 'analysis_missing' }, now);
    await this.events.recipientFinished(m, pending, run, spec.agent_id, failed, now);
    pending.finishedRuns.add(run.id);
    return undefined;
  }

  /** Lines workflow calls of one account may hold: its ceiling less the lines kept free for other calls. */
  accountLines(): number {
    return Math.max(1, this.config.MAX_CONCURRENT_CALLS - this.config.WORKFLOW_RESERVED_CALLS);
  }

  /**
   * Places the calls (after the transaction that took their lines committed), all at once, then records the calls
   * placed in one transaction. Answers per recipient: done, or the error that leaves its job to be retried.
   */
  private async placeAll(placements: Placement[]): Promise<Map<string, PromiseSettledResult<void>>> {
    const outcomes = await Promise.allSettled(placements.map((p) => this.place(p)));
    const results = new Map<string, PromiseSettledResult<void>>();
    const placed: { recipientId: string; callId: string; attempt: number }[] = [];
    outcomes.forEach((o, i) => {
      const r = placements[i].recipient;
      if (o.status === 'rejected') results.set(r.id, o);
      else if (o.value) placed.push({ recipientId: r.id, callId: o.value, attempt: r.attempt });
    });
    if (placed.length) {
      const recorded = await this.repository
        .transaction((m) => this.repository.recordCalls(m, placed, new Date(this.clock.now())))
        .then(() => DONE, (reason: unknown): PromiseRejectedResult => ({ status: 'rejected', reason }));
      for (const p of placed) results.set(p.recipientId, recorded);
    }
    return results;
  }

  /** Places one recipient's call; its id, or undefined when the calls service refused it (handled by `refused`). */
  private async place({ recipient: r, run, spec, dueAt }: Placement): Promise<string | undefined> {
    let callId: string;
    try {
      ({ id: callId } = await this.calls.createCall({
        account_id: r.accountId,
        agent_id: spec.agent_id,
        to: r.to,
        from: spec.from ?? '',
        variables: r.variables,
        metadata: r.metadata,
        idempotency_key: `workflow:${r.id}:${r.attempt}`,
        answer_within_ms: 0,
        workflow_run_id: run.id,
        workflow_recipient_id: r.id,
      }));
    } catch (error) {
      if (error instanceof AppError && (await this.refused(r, run, spec, error))) return undefined;
      // Unknown outcome (a deadline, a lost peer): the job is retried and places again under the same key.
      throw error;
    }
    workflowMetrics.callsPlaced.inc();
    workflowMetrics.dispatchLag.observe(Math.max(0, this.clock.now() - dueAt.getTime()) / 1000);
    return callId;
  }

  /**
   * The calls service refused the call before dialling. For now (its ceiling, overload): the recipient waits and
   * tries again, the attempt not counted. For good (the do-not-call list, the agent gone, an invalid number): it is
   * final. Returns false for a refusal this does not know (the job is retried).
   */
  private async refused(r: RecipientRecord, run: RunRecord, spec: WorkflowSpec, error: AppError): Promise<boolean> {
    const pending = new PendingEvents();
    const handled = await this.repository.transaction(async (m) => {
      const now = new Date(this.clock.now());
      const current = await this.repository.lockRecipient(m, r.id);
      if (!current || current.state !== 'dialing' || current.attempt !== r.attempt) return true;
      await this.repository.lockAccountLines(m, r.accountId);
      if (error.code === 'plan_limit_reached' || error.code === 'service_unavailable' || error.code === 'rate_limited') {
        const at = new Date(now.getTime() + BUSY_LINES_RETRY_MS);
        await this.repository.updateRecipient(m, r.id, { state: 'pending', attempt: r.attempt - 1, dueAt: at }, now);
        await this.jobs.schedule(m, [{ recipientId: r.id, at }]);
        await this.wakeWaiting(m, run, now);
        return true;
      }
      if (error.code !== 'validation_error' && error.code !== 'not_found') return false;
      const doNotCall = error.errors?.some((e) => e.field === 'to' && /do-not-call/.test(e.message));
      const reason = doNotCall ? 'do_not_call' : `call_refused: ${error.errors?.map((e) => `${e.field} ${e.message}`).join('; ') || error.message}`;
      const state = doNotCall ? 'suppressed' : 'failed';
      await this.repository.updateRecipient(m, r.id, { state, dueAt: null, reason, attempt: r.attempt - 1 }, now);
      await this.events.recipientFinished(m, pending, run, spec.agent_id, { ...current, state, reason, attempt: r.attempt - 1 }, now);
      await this.wakeWaiting(m, run, now);
      pending.finishedRuns.add(run.id);
      return true;
    });
    await this.published(pending);
    if (!handled) this.log.warn({ err: error, recipientId: r.id }, 'the calls service refused a workflow call');
    return handled;
  }

  /**
   * After a commit: its events go out, and each run where a recipient became final is completed if that was the
   * last one; either way its event streams get the run as it now is.
   */
  async published(pending: PendingEvents): Promise<void> {
    this.events.published(pending);
    for (const runId of pending.finishedRuns) await this.completeIfDone(runId);
  }

  /**
   * A line came free: wakes the oldest waiting recipient of the same run, else of another running run of the
   * account (whose own concurrency then decides).
   */
  async wakeWaiting(m: EntityManager, run: Pick<RunRecord, 'id' | 'accountId'>, now: Date, lines = 1): Promise<void> {
    // Under the line lock (again, when the caller released a line under it: it is re-entrant).
    await this.repository.lockAccountLines(m, run.accountId);
    let woken = await this.repository.takeWaiting(m, { runId: run.id }, lines);
    if (woken.length < lines) woken = [...woken, ...(await this.repository.takeWaiting(m, { accountId: run.accountId }, lines - woken.length))];
    for (const w of woken) await this.repository.updateRecipient(m, w.id, { state: w.attempt > 0 ? 'retrying' : 'pending' }, now);
    await this.jobs.schedule(
      m,
      woken.map((w) => ({ recipientId: w.id, at: now })),
    );
  }

  /**
   * Completes the run once every recipient is final and no more pages are expected, then tells its event streams
   * the run as it is. Its own transaction, after the one that made a recipient final committed: two recipients
   * finishing at once then both see the other final, and the run's row lock lets one of them complete it. A run with
   * recipients left is seen without that lock (the last to finish always sees none left), so a recipient's end does
   * not queue behind the dispatches that hold the run share-locked.
   */
  async completeIfDone(runId: string): Promise<void> {
    if ((await this.repository.unfinishedCount(this.repository.db.manager, runId)) > 0) {
      await this.events.runChanged(runId);
      return;
    }
    const pending = new PendingEvents();
    await this.repository.transaction(async (m) => {
      const now = new Date(this.clock.now());
      const run = await this.repository.lockRun(m, runId);
      if (!run || (run.status !== 'running' && run.status !== 'scheduled') || !run.recipientsComplete) return;
      if ((await this.repository.unfinishedCount(m, runId)) > 0) return;
      const workflow = await this.repository.getWorkflow(run.accountId, run.workflowId, m);
      const agentId = workflow?.spec.agent_id ?? '';
      await this.repository.updateRun(m, runId, { status: 'completed', completedAt: now, ...(run.startedAt ? {} : { startedAt: now }) }, now);
      const counts = await this.repository.countsOf(m, runId);
      if (!run.startedAt) await this.events.record(m, pending, run, agentId, 'workflow_run.started', { workflow_id: run.workflowId, run_id: runId, counts }, now);
      await this.events.record(m, pending, run, agentId, 'workflow_run.completed', { workflow_id: run.workflowId, run_id: runId, status: 'completed', counts }, now);
    });
    this.events.published(pending);
    await this.events.runChanged(runId);
  }
}
