import { Inject, Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { ServiceConfig, hasPhoneCarrier } from '@parley/config';
import { FieldProblem, RECIPIENT_STATES, RecipientState, RunStatus, successCriteriaProblems, WorkflowSpec, workflowsV1 } from '@parley/contracts';
import { newId, Page } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { AGENTS_PORT, AgentsPort } from './agents-port';
import { CALLS_PORT, CallsPort } from './calls-port';
import { RunDispatcher } from './dispatcher';
import { WORKFLOW_JOBS, WorkflowJobs } from './job-engine';
import { NormalizedRecipient, parseRecipientsPage, SuppressedRecipient } from './recipients';
import { PendingEvents, RunEvents } from './run-events';
import { WORKFLOW_CLOCK, WorkflowClock } from './workflow-clock';
import { mergeWorkflowPatch, validateWorkflowSpec, WorkflowSpecResult } from './workflow-spec';
import { NewRecipient, RecipientRecord, RunRecord, WorkflowRecord, WorkflowsRepository } from './workflows.repository';

/** Recipients one page (a run's creation, or one more page) carries at most. */
export const MAX_RECIPIENTS_PER_PAGE = 1000;

/**
 * Workflows and their runs: definitions (checked against the agent they name), runs started with pages of
 * recipients (suppressed as they arrive: invalid, duplicate, on the do-not-call list), and pause, resume and cancel.
 * Placing the calls is the RunDispatcher's, following their outcomes CallOutcomes'.
 */
@Injectable()
export class WorkflowsDomain {
  constructor(
    private readonly repository: WorkflowsRepository,
    private readonly events: RunEvents,
    private readonly dispatcher: RunDispatcher,
    @Inject(WORKFLOW_JOBS) private readonly jobs: WorkflowJobs,
    @Inject(CALLS_PORT) private readonly calls: CallsPort,
    @Inject(AGENTS_PORT) private readonly agents: AgentsPort,
    @Inject(WORKFLOW_CLOCK) private readonly clock: WorkflowClock,
    @Inject(CONFIG) private readonly config: ServiceConfig,
  ) {}

  private now(): Date {
    return new Date(this.clock.now());
  }

  async createWorkflow(accountId: string, specJson: string): Promise<WorkflowRecord> {
    const spec = await this.checked(accountId, validateWorkflowSpec(parseJson(specJson, 'body')));
    const now = this.now();
    const workflow: WorkflowRecord = { id: newId('wf'), accountId, spec, createdAt: now, updatedAt: now };
    await this.repository.insertWorkflow(workflow);
    return workflow;
  }

  async getWorkflow(accountId: string, id: string): Promise<WorkflowRecord> {
    const workflow = await this.repository.getWorkflow(accountId, id);
    if (!workflow) throw AppError.notFound('workflow');
    return workflow;
  }

  listWorkflows(accountId: string, limit: number, after: string): Promise<Page<WorkflowRecord>> {
    return this.repository.listWorkflows(accountId, limit, after);
  }

  /** Scalars merge, blocks are replaced; runs under way follow the new definition from their next dispatch. */
  async updateWorkflow(accountId: string, id: string, patchJson: string): Promise<WorkflowRecord> {
    const current = await this.getWorkflow(accountId, id);
    const spec = await this.checked(accountId, mergeWorkflowPatch(current.spec, parseJson(patchJson, 'body')), current.spec.agent_id);
    return this.repository.transaction(async (m) => {
      const locked = await this.repository.lockWorkflow(m, accountId, id);
      if (!locked) throw AppError.notFound('workflow');
      const now = this.now();
      await this.repository.updateWorkflow(m, id, spec, now);
      return { ...locked, spec, updatedAt: now };
    });
  }

  async deleteWorkflow(accountId: string, id: string): Promise<void> {
    await this.repository.transaction(async (m) => {
      if (!(await this.repository.lockWorkflow(m, accountId, id))) throw AppError.notFound('workflow');
      if (await this.repository.hasActiveRuns(m, id)) throw new AppError('conflict', 'The workflow has a run scheduled, running or paused; cancel it first.');
      await this.repository.deleteWorkflow(m, id);
    });
  }

  /** The spec's own problems, then the agent it names (checked when new or changed): 422 with every problem. */
  private async checked(accountId: string, result: WorkflowSpecResult, knownAgentId?: string): Promise<WorkflowSpec> {
    if ('problems' in result) throw AppError.validation(result.problems);
    const spec = result.spec;
    const field = spec.success?.extracted_field;
    if (spec.agent_id === knownAgentId && !field) return spec;
    const agent = await this.agents.agent(accountId, spec.agent_id);
    const problems: FieldProblem[] = [];
    if (!agent) problems.push({ field: 'agent_id', message: 'names no agent of this account' });
    else if (agent.mode === 'webrtc') problems.push({ field: 'agent_id', message: 'names a webrtc agent: it places no phone calls' });
    else if (agent.autonomy === 'simple') problems.push({ field: 'agent_id', message: 'names a simple agent: a person answers its calls, it places none' });
    else if (field) problems.push(...successCriteriaProblems(spec.success ?? {}, 'success', agent.post_call?.extraction ?? []));
    if (problems.length) throw AppError.validation(problems);
    return spec;
  }

  async startRun(accountId: string, request: workflowsV1.StartRunRequest): Promise<{ run: RunRecord; added: number; suppressed: number }> {
    const workflow = await this.getWorkflow(accountId, request.workflow_id);
    const startAt = request.start_at ? new Date(request.start_at) : this.now();
    if (Number.isNaN(startAt.getTime())) throw AppError.validation([{ field: 'start_at', message: 'must be an RFC 3339 date-time' }]);
    // A run's first page may be empty only when more pages follow.
    const page = await this.readPage(accountId, request.recipients, workflow.spec, !request.recipients_complete);
    const pending = new PendingEvents();
    const result = await this.repository.transaction(async (m) => {
      const now = this.now();
      const started = startAt.getTime() <= now.getTime();
      const run: RunRecord = {
        id: newId('wfr'),
        accountId,
        workflowId: workflow.id,
        status: started ? 'running' : 'scheduled',
        startAt,
        startedAt: null,
        completedAt: null,
        recipientsComplete: request.recipients_complete,
        metadata: request.metadata ?? {},
        createdAt: now,
        updatedAt: now,
      };
      await this.repository.insertRun(m, run);
      const counts = await this.addPage(m, run, workflow.spec, page, now, pending);
      if (started) {
        await this.repository.updateRun(m, run.id, { startedAt: now }, now);
        run.startedAt = now;
        await this.events.record(m, pending, run, workflow.spec.agent_id, 'workflow_run.started', { workflow_id: workflow.id, run_id: run.id, counts: await this.repository.countsOf(m, run.id) }, now);
      }
      return { run, ...counts };
    });
    pending.finishedRuns.add(result.run.id);
    await this.dispatcher.published(pending);
    return result;
  }

  async addRecipients(accountId: string, request: workflowsV1.AddRecipientsRequest): Promise<{ run: RunRecord; added: number; suppressed: number }> {
    const workflow = await this.getWorkflow(accountId, request.workflow_id);
    // An empty last page closes the run's list.
    const page = await this.readPage(accountId, request.recipients, workflow.spec, request.complete);
    const pending = new PendingEvents();
    const result = await this.repository.transaction(async (m) => {
      const now = this.now();
      const run = await this.lockedRun(m, accountId, request.workflow_id, request.run_id);
      if (run.recipientsComplete) throw new AppError('conflict', 'The run has all its recipients: its last page said complete.');
      if (run.status === 'cancelled' || run.status === 'completed') throw new AppError('conflict', `The run is ${run.status}.`);
      const counts = await this.addPage(m, run, workflow.spec, page, now, pending);
      if (request.complete) await this.repository.updateRun(m, run.id, { recipientsComplete: true }, now);
      return { run: { ...run, recipientsComplete: run.recipientsComplete || request.complete }, ...counts };
    });
    if (request.complete) pending.finishedRuns.add(result.run.id);
    await this.dispatcher.published(pending);
    return result;
  }

  /** Parses a page and looks its numbers up on the do-not-call list (before any transaction: a gRPC call). */
  private async readPage(
    accountId: string,
    recipients: workflowsV1.RecipientsPage | undefined,
    spec: WorkflowSpec,
    mayBeEmpty: boolean,
  ): Promise<{ accepted: NormalizedRecipient[]; suppressed: SuppressedRecipient[]; doNotCall: Set<string> }> {
    const parsed = parseRecipientsPage(
      { recipients_json: recipients?.recipients_json || undefined, recipients_csv: recipients?.recipients_csv || undefined },
      spec,
      // A deployment without a phone carrier calls the dev phone's fictional (555) numbers: length checks only.
      { maxPerPage: MAX_RECIPIENTS_PER_PAGE, numberCheck: hasPhoneCarrier(this.config) ? 'valid' : 'possible', allowEmpty: mayBeEmpty },
    );
    if ('problems' in parsed) throw AppError.validation(parsed.problems);
    const listed = parsed.accepted.length ? await this.calls.doNotCall(accountId, parsed.accepted.map((r) => r.to)) : [];
    return { ...parsed, doNotCall: new Set(listed) };
  }

  /**
   * Adds a parsed page to a run under its lock: numbers it has already and those on the do-not-call list are
   * suppressed; the rest are due at the run's start (or now) and their dispatch jobs are scheduled in the same
   * transaction.
   */
  private async addPage(
    m: EntityManager,
    run: RunRecord,
    spec: WorkflowSpec,
    page: { accepted: NormalizedRecipient[]; suppressed: SuppressedRecipient[]; doNotCall: Set<string> },
    now: Date,
    pending: PendingEvents,
  ): Promise<{ added: number; suppressed: number }> {
    const total = (await this.repository.recipientCount(m, run.id)) + page.accepted.length + page.suppressed.length;
    if (total > this.config.WORKFLOW_MAX_RECIPIENTS_PER_RUN) {
      throw AppError.validation([{ field: 'recipients', message: `would give the run ${total} recipients; a run holds at most ${this.config.WORKFLOW_MAX_RECIPIENTS_PER_RUN} (WORKFLOW_MAX_RECIPIENTS_PER_RUN)` }]);
    }
    const known = await this.repository.knownNumbers(m, run.id, page.accepted.map((r) => r.to));
    const dueAt = new Date(Math.max(run.startAt.getTime(), now.getTime()));
    const rows: NewRecipient[] = [];
    for (const r of page.accepted) {
      const reason = page.doNotCall.has(r.to) ? 'do_not_call' : known.has(r.to) ? 'duplicate' : null;
      rows.push({ id: newId('wfrc'), to: r.to, timezone: r.timezone, variables: r.variables, metadata: r.metadata, state: reason ? 'suppressed' : 'pending', dueAt: reason ? null : dueAt, reason });
    }
    for (const s of page.suppressed) {
      rows.push({ id: newId('wfrc'), to: s.input.to ?? '', timezone: s.input.timezone ?? spec.timezone ?? 'UTC', variables: s.input.variables ?? {}, metadata: s.input.metadata ?? {}, state: 'suppressed', dueAt: null, reason: s.reason });
    }
    await this.repository.insertRecipients(m, run, rows, now);
    const callable = rows.filter((r) => r.state === 'pending');
    await this.jobs.schedule(m, callable.map((r) => ({ recipientId: r.id, at: dueAt })));
    for (const r of rows.filter((row) => row.state === 'suppressed')) {
      await this.events.recipientFinished(m, pending, run, spec.agent_id, { ...r, attempt: 0, lastOutcome: null, callIds: [] }, now);
    }
    return { added: callable.length, suppressed: rows.length - callable.length };
  }

  private async lockedRun(m: EntityManager, accountId: string, workflowId: string, runId: string): Promise<RunRecord> {
    const run = await this.repository.getRun(accountId, workflowId, runId, m);
    const locked = run && (await this.repository.lockRun(m, run.id));
    if (!locked) throw AppError.notFound('workflow run');
    return locked;
  }

  async getRun(accountId: string, workflowId: string, runId: string): Promise<RunRecord> {
    const run = await this.repository.getRun(accountId, workflowId, runId);
    if (!run) throw AppError.notFound('workflow run');
    return run;
  }

  async listRuns(accountId: string, workflowId: string, limit: number, after: string): Promise<Page<RunRecord>> {
    await this.getWorkflow(accountId, workflowId);
    return this.repository.listRuns(accountId, workflowId, limit, after);
  }

  counts(runIds: string[]): Promise<Map<string, workflowsV1.RunCounts>> {
    return this.repository.counts(runIds);
  }

  async listRecipients(accountId: string, request: workflowsV1.ListRecipientsRequest, limit: number): Promise<Page<RecipientRecord>> {
    const run = await this.getRun(accountId, request.workflow_id, request.run_id);
    const state = request.state || undefined;
    if (state && !(RECIPIENT_STATES as readonly string[]).includes(state)) throw AppError.validation([{ field: 'state', message: `must be one of ${RECIPIENT_STATES.join(', ')}` }]);
    if (request.after && !/^\d{1,18}$/.test(request.after)) throw AppError.validation([{ field: 'starting_after', message: 'is not a valid cursor' }]);
    return this.repository.listRecipients(run.id, state as RecipientState | undefined, limit, request.after);
  }

  /** No new calls; live ones go on, and recipients that come due wait for the resume. */
  pauseRun(accountId: string, workflowId: string, runId: string): Promise<RunRecord> {
    return this.command(accountId, workflowId, runId, async (_m, run) => {
      if (run.status !== 'running' && run.status !== 'scheduled') throw new AppError('conflict', `Only a scheduled or running run can be paused; this one is ${run.status}.`);
      return { status: 'paused' as RunStatus };
    });
  }

  /** Back to running (or scheduled, if it never started); the recipients that waited are woken, as many as it has lines. */
  resumeRun(accountId: string, workflowId: string, runId: string): Promise<RunRecord> {
    return this.command(accountId, workflowId, runId, async (m, run, now) => {
      if (run.status !== 'paused') throw new AppError('conflict', `Only a paused run can be resumed; this one is ${run.status}.`);
      const workflow = await this.repository.getWorkflow(accountId, workflowId, m);
      const status: RunStatus = run.startedAt || run.startAt.getTime() <= now.getTime() ? 'running' : 'scheduled';
      // Woken after the status change commits with it; their jobs see the run running.
      await this.repository.updateRun(m, run.id, { status }, now);
      await this.dispatcher.wakeWaiting(m, run, now, workflow?.spec.concurrency ?? 1);
      return { status };
    });
  }

  /** No new calls; live ones go on (their outcomes are recorded), every recipient not yet final is cancelled. */
  cancelRun(accountId: string, workflowId: string, runId: string): Promise<RunRecord> {
    return this.command(accountId, workflowId, runId, async (m, run, now, pending) => {
      if (run.status === 'completed' || run.status === 'cancelled') throw new AppError('conflict', `The run is ${run.status} already.`);
      const workflow = await this.repository.getWorkflow(accountId, workflowId, m);
      const agentId = workflow?.spec.agent_id ?? '';
      const cancelled = await this.repository.cancelIdle(m, run.id, now);
      for (const r of cancelled) await this.events.recipientFinished(m, pending, run, agentId, r, now);
      await this.repository.updateRun(m, run.id, { status: 'cancelled', completedAt: now }, now);
      const counts = await this.repository.countsOf(m, run.id);
      await this.events.record(m, pending, run, agentId, 'workflow_run.completed', { workflow_id: workflowId, run_id: run.id, status: 'cancelled', counts }, now);
      return { status: 'cancelled' as RunStatus, completedAt: now };
    });
  }

  private async command(
    accountId: string,
    workflowId: string,
    runId: string,
    change: (m: EntityManager, run: RunRecord, now: Date, pending: PendingEvents) => Promise<Partial<Pick<RunRecord, 'status' | 'completedAt'>>>,
  ): Promise<RunRecord> {
    const pending = new PendingEvents();
    const run = await this.repository.transaction(async (m) => {
      const now = this.now();
      const locked = await this.lockedRun(m, accountId, workflowId, runId);
      const changed = await change(m, locked, now, pending);
      await this.repository.updateRun(m, locked.id, changed, now);
      return { ...locked, ...changed, updatedAt: now };
    });
    await this.dispatcher.published(pending);
    await this.events.runChanged(run.id);
    return run;
  }
}

function parseJson(text: string, field: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw AppError.validation([{ field, message: 'is not valid JSON' }]);
  }
}
