import { Inject, Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { callSucceeded, outcomeOfEndReason, RETRYABLE_OUTCOMES, RetryableOutcome, WebhookEvent, WorkflowSpec } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { CONFIG } from '@parley/runtime';
import { RunDispatcher } from './dispatcher';
import { WORKFLOW_JOBS, WorkflowJobs } from './job-engine';
import { PendingEvents, RunEvents } from './run-events';
import { WORKFLOW_CLOCK, WorkflowClock } from './workflow-clock';
import { RecipientChange, RecipientRecord, RunRecord, WorkflowsRepository } from './workflows.repository';

/**
 * What a recipient's call came to, from the calls service's events (`call.ended`, and `call.analysed` when success
 * is a post-call extracted field). Each event is handled once per recipient attempt whatever the bus redelivers:
 * it applies only while the recipient is still waiting for that call.
 */
@Injectable()
export class CallOutcomes {
  constructor(
    private readonly repository: WorkflowsRepository,
    private readonly events: RunEvents,
    private readonly dispatcher: RunDispatcher,
    @Inject(WORKFLOW_JOBS) private readonly jobs: WorkflowJobs,
    @Inject(WORKFLOW_CLOCK) private readonly clock: WorkflowClock,
    @Inject(CONFIG) private readonly config: ServiceConfig,
  ) {}

  async callEnded(event: WebhookEvent<'call.ended'>): Promise<void> {
    const link = event.workflow;
    if (!link || !event.call_id) return;
    await this.apply(link.recipient_id, event.call_id, ['dialing', 'in_call'], async (m, r, run, spec, now) => {
      const endReason = event.data.end_reason;
      const outcome = outcomeOfEndReason(endReason);
      const base: RecipientChange = { lastOutcome: outcome, lastEndReason: endReason };
      const succeeded = callSucceeded(spec.success ?? {}, endReason);
      let change: RecipientChange;
      if (succeeded === null) {
        // Success is decided by the analysis; the line is free meanwhile.
        change = { ...base, state: 'analysing', dueAt: new Date(now.getTime() + this.config.WORKFLOW_ANALYSIS_WAIT_SECONDS * 1000) };
        await this.jobs.schedule(m, [{ recipientId: r.id, at: change.dueAt as Date }]);
      } else if (succeeded) {
        change = { ...base, state: 'succeeded', dueAt: null, reason: null };
      } else {
        change = { ...base, ...(await this.retryOrFail(m, r, run, spec, outcome, endReason, now)) };
      }
      await this.repository.updateRecipient(m, r.id, change, now);
      await this.dispatcher.wakeWaiting(m, run, now);
      return { ...r, ...change } as RecipientRecord;
    });
  }

  async callAnalysed(event: WebhookEvent<'call.analysed'>): Promise<void> {
    const link = event.workflow;
    if (!link || !event.call_id) return;
    await this.apply(link.recipient_id, event.call_id, ['analysing'], async (m, r, _run, spec, now) => {
      // Analysing: its end reason counted already.
      const ok = callSucceeded(spec.success ?? {}, r.lastEndReason ?? '', event.data.extracted) === true;
      const change: RecipientChange = ok ? { state: 'succeeded', dueAt: null, reason: null } : { state: 'failed', dueAt: null, reason: 'not_successful' };
      await this.repository.updateRecipient(m, r.id, change, now);
      return { ...r, ...change } as RecipientRecord;
    });
  }

  /** A retry when the policy has one left for this outcome (and the run goes on), else the final failure. */
  private async retryOrFail(
    m: EntityManager,
    r: RecipientRecord,
    run: RunRecord,
    spec: WorkflowSpec,
    outcome: RetryableOutcome | 'other',
    endReason: string,
    now: Date,
  ): Promise<RecipientChange> {
    const rule = (RETRYABLE_OUTCOMES as readonly string[]).includes(outcome) ? spec.retry?.[outcome as RetryableOutcome] : undefined;
    const used = rule ? (r.retries[outcome] ?? 0) : 0;
    if (!rule || used >= rule.retries) return { state: 'failed', dueAt: null, reason: outcome === 'other' ? endReason : outcome };
    // A retry the run's cancellation took away.
    if (run.status === 'cancelled') return { state: 'cancelled', dueAt: null, reason: 'run_cancelled' };
    const at = new Date(now.getTime() + rule.wait_seconds * 1000);
    await this.jobs.schedule(m, [{ recipientId: r.id, at }]);
    return { state: 'retrying', dueAt: at, retries: { ...r.retries, [outcome]: used + 1 } };
  }

  /**
   * Applies `change` to the recipient when it is in one of `states` and `callId` is its current attempt's call
   * (recorded already, or not yet when the call ended before CreateCall answered); records the final state's event
   * and completes the run when it was its last recipient.
   */
  private async apply(
    recipientId: string,
    callId: string,
    states: RecipientRecord['state'][],
    change: (m: EntityManager, r: RecipientRecord, run: RunRecord, spec: WorkflowSpec, now: Date, pending: PendingEvents) => Promise<RecipientRecord>,
  ): Promise<void> {
    const pending = new PendingEvents();
    await this.repository.transaction(async (m) => {
      const now = new Date(this.clock.now());
      const r = await this.repository.lockRecipient(m, recipientId);
      if (!r || !states.includes(r.state)) return;
      const current = r.callIds.at(-1);
      // A redelivered event of an earlier attempt's call.
      if (r.callIds.includes(callId) ? current !== callId : r.state !== 'dialing') return;
      const run = await this.repository.getRunById(m, r.runId);
      const workflow = run && (await this.repository.getWorkflow(run.accountId, run.workflowId, m));
      if (!run || !workflow) return;
      const spec = workflow.spec;
      // A line may come free here: it is handed on under the account's line lock, as lines are taken, so a recipient
      // that found no line a moment ago is already waiting when the wake looks for it. wakeWaiting takes that lock,
      // after this recipient's own updates: those are seen by others only at the commit, which the lock outlasts, so it
      // need not cover them (held from here, it serialised every ended call of the account behind the dispatches).
      await this.repository.addCall(m, r.id, callId);
      const after = await change(m, { ...r, callIds: r.callIds.includes(callId) ? r.callIds : [...r.callIds, callId] }, run, spec, now, pending);
      if (after.state === 'succeeded' || after.state === 'failed' || after.state === 'cancelled') {
        await this.events.recipientFinished(m, pending, run, spec.agent_id, after, now);
        pending.finishedRuns.add(run.id);
      }
    });
    await this.dispatcher.published(pending);
  }
}
