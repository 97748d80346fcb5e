import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { RecipientState, RunCounts, RunStatus, WebhookEvent, webhookEventSubject, WorkflowSpec } from '@parley/contracts';
import { enqueueOutbox } from '@parley/messaging';
import { decodePosition, Page, pageOf } from '@parley/persistence';

export const WORKFLOWS_DB = Symbol('WORKFLOWS_DB');

/**
 * A recipient's state as the service tracks it. Public states are coarser (PUBLIC_STATE): `waiting` (due, but no
 * free line or the run is paused) reads as pending; `dialing` (a line taken, the call being placed), `in_call` and
 * `analysing` (the call is over; success waits for its post-call analysis) read as in progress.
 */
export type InternalState = 'pending' | 'waiting' | 'dialing' | 'in_call' | 'analysing' | 'retrying' | 'succeeded' | 'failed' | 'suppressed' | 'cancelled';

export const PUBLIC_STATE: Record<InternalState, RecipientState> = {
  pending: 'pending',
  waiting: 'pending',
  dialing: 'in_progress',
  in_call: 'in_progress',
  analysing: 'in_progress',
  retrying: 'retrying',
  succeeded: 'succeeded',
  failed: 'failed',
  suppressed: 'suppressed',
  cancelled: 'cancelled',
};

const INTERNAL_OF: Record<RecipientState, InternalState[]> = {
  pending: ['pending', 'waiting'],
  in_progress: ['dialing', 'in_call', 'analysing'],
  retrying: ['retrying'],
  succeeded: ['succeeded'],
  failed: ['failed'],
  suppressed: ['suppressed'],
  cancelled: ['cancelled'],
};

export const FINAL_STATES: readonly InternalState[] = ['succeeded', 'failed', 'suppressed', 'cancelled'];

export interface WorkflowRecord {
  id: string;
  accountId: string;
  spec: WorkflowSpec;
  createdAt: Date;
  updatedAt: Date;
}

export interface RunRecord {
  id: string;
  accountId: string;
  workflowId: string;
  status: RunStatus;
  startAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  recipientsComplete: boolean;
  metadata: Record<string, string>;
  createdAt: Date;
  updatedAt: Date;
}

export interface RecipientRecord {
  id: string;
  seq: string;
  accountId: string;
  runId: string;
  to: string;
  timezone: string;
  variables: Record<string, string>;
  metadata: Record<string, string>;
  state: InternalState;
  attempt: number;
  retries: Partial<Record<string, number>>;
  dueAt: Date | null;
  lastOutcome: string | null;
  lastEndReason: string | null;
  reason: string | null;
  callIds: string[];
  createdAt: Date;
  updatedAt: Date;
}

export type NewRecipient = Pick<RecipientRecord, 'id' | 'to' | 'timezone' | 'variables' | 'metadata' | 'state' | 'dueAt' | 'reason'>;
export type RecipientChange = Partial<Pick<RecipientRecord, 'state' | 'attempt' | 'retries' | 'dueAt' | 'lastOutcome' | 'lastEndReason' | 'reason'>>;

/* eslint-disable @typescript-eslint/no-explicit-any -- rows as pg returns them, mapped once below */
const toWorkflow = (r: any): WorkflowRecord => ({ id: r.id, accountId: r.account_id, spec: r.spec, createdAt: r.created_at, updatedAt: r.updated_at });
const toRun = (r: any): RunRecord => ({
  id: r.id,
  accountId: r.account_id,
  workflowId: r.workflow_id,
  status: r.status,
  startAt: r.start_at,
  startedAt: r.started_at,
  completedAt: r.completed_at,
  recipientsComplete: r.recipients_complete,
  metadata: r.metadata,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});
const toRecipient = (r: any): RecipientRecord => ({
  id: r.id,
  seq: String(r.seq),
  accountId: r.account_id,
  runId: r.run_id,
  to: r.to_number,
  timezone: r.timezone,
  variables: r.variables,
  metadata: r.metadata,
  state: r.state,
  attempt: r.attempt,
  retries: r.retries,
  dueAt: r.due_at,
  lastOutcome: r.last_outcome,
  lastEndReason: r.last_end_reason,
  reason: r.reason,
  callIds: r.call_ids,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});
/* eslint-enable @typescript-eslint/no-explicit-any */

const CHANGE_COLUMNS: Record<keyof RecipientChange, string> = {
  state: 'state',
  attempt: 'attempt',
  retries: 'retries',
  dueAt: 'due_at',
  lastOutcome: 'last_outcome',
  lastEndReason: 'last_end_reason',
  reason: 'reason',
};

/**
 * All SQL of workflows, runs and recipients (schema `workflows`). Reads take the account, so another account's
 * objects are simply absent. Every time written comes from the caller (the service's clock), never from now(), so
 * a test clock decides them.
 */
@Injectable()
export class WorkflowsRepository {
  constructor(@Inject(WORKFLOWS_DB) readonly db: DataSource) {}

  transaction<T>(work: (m: EntityManager) => Promise<T>): Promise<T> {
    return this.db.transaction(work);
  }

  async insertWorkflow(w: WorkflowRecord): Promise<void> {
    await this.db.query(`INSERT INTO workflows (id, account_id, spec, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)`, [w.id, w.accountId, w.spec, w.createdAt]);
  }

  async getWorkflow(accountId: string, id: string, m: EntityManager = this.db.manager): Promise<WorkflowRecord | undefined> {
    const [row] = await m.query(`SELECT * FROM workflows WHERE account_id = $1 AND id = $2`, [accountId, id]);
    return row && toWorkflow(row);
  }

  async lockWorkflow(m: EntityManager, accountId: string, id: string): Promise<WorkflowRecord | undefined> {
    const [row] = await m.query(`SELECT * FROM workflows WHERE account_id = $1 AND id = $2 FOR UPDATE`, [accountId, id]);
    return row && toWorkflow(row);
  }

  async listWorkflows(accountId: string, limit: number, after: string): Promise<Page<WorkflowRecord>> {
    const from = decodePosition(after);
    const rows = await this.db.query(
      `SELECT * FROM workflows WHERE account_id = $1 ${from ? 'AND (created_at, id) < ($3, $4)' : ''} ORDER BY created_at DESC, id DESC LIMIT $2`,
      from ? [accountId, limit + 1, from.createdAt, from.id] : [accountId, limit + 1],
    );
    return pageOf(rows.map(toWorkflow), limit);
  }

  async updateWorkflow(m: EntityManager, id: string, spec: WorkflowSpec, at: Date): Promise<void> {
    await m.query(`UPDATE workflows SET spec = $2, updated_at = $3 WHERE id = $1`, [id, spec, at]);
  }

  async deleteWorkflow(m: EntityManager, id: string): Promise<void> {
    await m.query(`DELETE FROM workflows WHERE id = $1`, [id]);
  }

  async hasActiveRuns(m: EntityManager, workflowId: string): Promise<boolean> {
    const rows = await m.query(`SELECT 1 FROM workflow_runs WHERE workflow_id = $1 AND status IN ('scheduled', 'running', 'paused') LIMIT 1`, [workflowId]);
    return rows.length > 0;
  }

  async insertRun(m: EntityManager, r: RunRecord): Promise<void> {
    await m.query(
      `INSERT INTO workflow_runs (id, account_id, workflow_id, status, start_at, recipients_complete, metadata, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
      [r.id, r.accountId, r.workflowId, r.status, r.startAt, r.recipientsComplete, r.metadata, r.createdAt],
    );
  }

  async getRun(accountId: string, workflowId: string, runId: string, m: EntityManager = this.db.manager): Promise<RunRecord | undefined> {
    const [row] = await m.query(`SELECT * FROM workflow_runs WHERE account_id = $1 AND workflow_id = $2 AND id = $3`, [accountId, workflowId, runId]);
    return row && toRun(row);
  }

  async getRunById(m: EntityManager, runId: string): Promise<RunRecord | undefined> {
    const [row] = await m.query(`SELECT * FROM workflow_runs WHERE id = $1`, [runId]);
    return row && toRun(row);
  }

  /** The run under its row lock: every change of a run and of its set of recipients takes it first. */
  async lockRun(m: EntityManager, runId: string): Promise<RunRecord | undefined> {
    const [row] = await m.query(`SELECT * FROM workflow_runs WHERE id = $1 FOR UPDATE`, [runId]);
    return row && toRun(row);
  }

  /** The run, share-locked: dispatches go on side by side while a pause or cancel waits for them (and they for it). */
  async lockRunShared(m: EntityManager, runId: string): Promise<RunRecord | undefined> {
    const [row] = await m.query(`SELECT * FROM workflow_runs WHERE id = $1 FOR SHARE`, [runId]);
    return row && toRun(row);
  }

  /** Moves a scheduled run to running; undefined when another transaction did first. */
  async startRun(m: EntityManager, runId: string, at: Date): Promise<RunRecord | undefined> {
    // TypeORM answers an UPDATE with [rows, count].
    const [rows] = await m.query(
      `UPDATE workflow_runs SET status = 'running', started_at = $2, updated_at = $2 WHERE id = $1 AND status = 'scheduled' RETURNING *`,
      [runId, at],
    );
    return rows[0] && toRun(rows[0]);
  }

  async listRuns(accountId: string, workflowId: string, limit: number, after: string): Promise<Page<RunRecord>> {
    const from = decodePosition(after);
    const rows = await this.db.query(
      `SELECT * FROM workflow_runs WHERE account_id = $1 AND workflow_id = $2 ${from ? 'AND (created_at, id) < ($4, $5)' : ''}
        ORDER BY created_at DESC, id DESC LIMIT $3`,
      from ? [accountId, workflowId, limit + 1, from.createdAt, from.id] : [accountId, workflowId, limit + 1],
    );
    return pageOf(rows.map(toRun), limit);
  }

  async updateRun(m: EntityManager, id: string, change: Partial<Pick<RunRecord, 'status' | 'startedAt' | 'completedAt' | 'recipientsComplete'>>, at: Date): Promise<void> {
    const sets = ['updated_at = $2'];
    const params: unknown[] = [id, at];
    if (change.status !== undefined) sets.push(`status = $${params.push(change.status)}`);
    if (change.startedAt !== undefined) sets.push(`started_at = $${params.push(change.startedAt)}`);
    if (change.completedAt !== undefined) sets.push(`completed_at = $${params.push(change.completedAt)}`);
    if (change.recipientsComplete !== undefined) sets.push(`recipients_complete = $${params.push(change.recipientsComplete)}`);
    await m.query(`UPDATE workflow_runs SET ${sets.join(', ')} WHERE id = $1`, params);
  }

  /** Live counters of runs, by public state (one grouped scan of each run's recipients). */
  async counts(runIds: string[], m: EntityManager = this.db.manager): Promise<Map<string, RunCounts>> {
    const out = new Map<string, RunCounts>(runIds.map((id) => [id, emptyCounts()]));
    if (!runIds.length) return out;
    const rows: { run_id: string; state: InternalState; n: string }[] = await m.query(
      `SELECT run_id, state, count(*) AS n FROM workflow_recipients WHERE run_id = ANY($1) GROUP BY run_id, state`,
      [runIds],
    );
    for (const r of rows) {
      const counts = out.get(r.run_id) as RunCounts;
      counts[PUBLIC_STATE[r.state]] += Number(r.n);
      counts.total += Number(r.n);
    }
    return out;
  }

  async countsOf(m: EntityManager, runId: string): Promise<RunCounts> {
    return (await this.counts([runId], m)).get(runId) ?? emptyCounts();
  }

  /** Which of `numbers` the run has already (any state but suppressed): the later copy is a duplicate. */
  async knownNumbers(m: EntityManager, runId: string, numbers: string[]): Promise<Set<string>> {
    if (!numbers.length) return new Set();
    const rows: { to_number: string }[] = await m.query(
      `SELECT DISTINCT to_number FROM workflow_recipients WHERE run_id = $1 AND to_number = ANY($2) AND state <> 'suppressed'`,
      [runId, numbers],
    );
    return new Set(rows.map((r) => r.to_number));
  }

  async recipientCount(m: EntityManager, runId: string): Promise<number> {
    const [row] = await m.query(`SELECT count(*) AS n FROM workflow_recipients WHERE run_id = $1`, [runId]);
    return Number(row.n);
  }

  async insertRecipients(m: EntityManager, run: RunRecord, recipients: NewRecipient[], at: Date): Promise<void> {
    if (!recipients.length) return;
    await m.query(
      `INSERT INTO workflow_recipients (id, account_id, run_id, to_number, timezone, variables, metadata, state, due_at, reason, created_at, updated_at)
       SELECT r.id, $1, $2, r.to_number, r.timezone, r.variables, r.metadata, r.state, r.due_at, r.reason, $3, $3
         FROM jsonb_to_recordset($4::jsonb)
              AS r(ord int, id text, to_number text, timezone text, variables jsonb, metadata jsonb, state text, due_at timestamptz, reason text)
        ORDER BY r.ord`,
      [
        run.accountId,
        run.id,
        at,
        JSON.stringify(
          recipients.map((r, ord) => ({ ord, id: r.id, to_number: r.to, timezone: r.timezone, variables: r.variables, metadata: r.metadata, state: r.state, due_at: r.dueAt, reason: r.reason })),
        ),
      ],
    );
  }

  async getRecipient(id: string, m: EntityManager = this.db.manager): Promise<RecipientRecord | undefined> {
    const [row] = await m.query(`SELECT * FROM workflow_recipients WHERE id = $1`, [id]);
    return row && toRecipient(row);
  }

  async lockRecipient(m: EntityManager, id: string): Promise<RecipientRecord | undefined> {
    const [row] = await m.query(`SELECT * FROM workflow_recipients WHERE id = $1 FOR UPDATE`, [id]);
    return row && toRecipient(row);
  }

  async updateRecipient(m: EntityManager, id: string, change: RecipientChange, at: Date): Promise<void> {
    const sets = ['updated_at = $2'];
    const params: unknown[] = [id, at];
    for (const [key, column] of Object.entries(CHANGE_COLUMNS) as [keyof RecipientChange, string][]) {
      if (change[key] !== undefined) sets.push(`${column} = $${params.push(change[key])}`);
    }
    await m.query(`UPDATE workflow_recipients SET ${sets.join(', ')} WHERE id = $1`, params);
  }

  async addCall(m: EntityManager, id: string, callId: string): Promise<void> {
    await m.query(`UPDATE workflow_recipients SET call_ids = array_append(call_ids, $2) WHERE id = $1 AND NOT ($2 = ANY(call_ids))`, [id, callId]);
  }

  /**
   * Serialises line-taking within an account (a transaction-scoped advisory lock), so two replicas never both take
   * the last free line.
   */
  async lockAccountLines(m: EntityManager, accountId: string): Promise<void> {
    await m.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`workflows:lines:${accountId}`]);
  }

  /** Calls being placed or live of the account's workflow runs, per run (the in-flight index answers it). */
  async linesByRun(m: EntityManager, accountId: string): Promise<Map<string, number>> {
    const rows: { run_id: string; n: number }[] = await m.query(
      `SELECT run_id, count(*)::int AS n FROM workflow_recipients WHERE account_id = $1 AND state IN ('dialing', 'in_call') GROUP BY run_id`,
      [accountId],
    );
    return new Map(rows.map((r) => [r.run_id, r.n]));
  }

  /** The runs the recipients belong to (a recipient never changes run), in id order. */
  async runsOf(m: EntityManager, recipientIds: string[]): Promise<string[]> {
    const rows: { run_id: string }[] = await m.query(`SELECT DISTINCT run_id FROM workflow_recipients WHERE id = ANY($1) ORDER BY run_id`, [recipientIds]);
    return rows.map((r) => r.run_id);
  }

  /**
   * Locks, in id order, those of the recipients a dispatch may act on: due to be called (`pending`, `retrying`), a
   * call being placed (`dialing`), an analysis awaited (`analysing`). The others are left unlocked: a `waiting` one is
   * woken under the account's line lock (takeWaiting), and holding it here while asking for that lock would deadlock.
   */
  async lockDispatchable(m: EntityManager, ids: string[]): Promise<RecipientRecord[]> {
    const rows = await m.query(
      `SELECT * FROM workflow_recipients WHERE id = ANY($1) AND state IN ('pending', 'retrying', 'dialing', 'analysing') ORDER BY id FOR UPDATE`,
      [ids],
    );
    return rows.map(toRecipient);
  }

  /** Recipients that got a line: `dialing`, their attempt counted. */
  async takeLines(m: EntityManager, ids: string[], at: Date): Promise<void> {
    if (ids.length) await m.query(`UPDATE workflow_recipients SET state = 'dialing', attempt = attempt + 1, updated_at = $2 WHERE id = ANY($1)`, [ids, at]);
  }

  /** Due recipients that found no line (or a paused run): `waiting`, still due from when they were. */
  async markWaiting(m: EntityManager, ids: string[], at: Date): Promise<void> {
    if (ids.length) await m.query(`UPDATE workflow_recipients SET state = 'waiting', due_at = coalesce(due_at, $2), updated_at = $2 WHERE id = ANY($1)`, [ids, at]);
  }

  /**
   * Records the calls placed for recipients (each once), and moves those still `dialing` that attempt to `in_call`
   * (a call's end may have been recorded first). Rows are locked in id order first, as every multi-row lock here.
   */
  async recordCalls(m: EntityManager, calls: { recipientId: string; callId: string; attempt: number }[], at: Date): Promise<void> {
    if (!calls.length) return;
    const ids = calls.map((c) => c.recipientId);
    await m.query(`SELECT id FROM workflow_recipients WHERE id = ANY($1) ORDER BY id FOR UPDATE`, [ids]);
    await m.query(
      `UPDATE workflow_recipients w
          SET call_ids = CASE WHEN c.call_id = ANY(w.call_ids) THEN w.call_ids ELSE array_append(w.call_ids, c.call_id) END,
              state = CASE WHEN w.state = 'dialing' AND w.attempt = c.attempt THEN 'in_call' ELSE w.state END,
              updated_at = CASE WHEN w.state = 'dialing' AND w.attempt = c.attempt THEN $4 ELSE w.updated_at END
         FROM unnest($1::text[], $2::text[], $3::int[]) AS c(id, call_id, attempt)
        WHERE w.id = c.id`,
      [ids, calls.map((c) => c.callId), calls.map((c) => c.attempt), at],
    );
  }

  /**
   * Waiting recipients to wake, oldest due first: of the run given, else of any running run of the account. Locked
   * and moved back to `pending`, due now, by the caller, under the account's line lock. Not SKIP LOCKED: a waiting
   * row another transaction holds (a stale job looking at it) would be skipped and its wake lost.
   */
  async takeWaiting(m: EntityManager, where: { runId: string } | { accountId: string }, limit: number): Promise<RecipientRecord[]> {
    if (limit <= 0) return [];
    const rows = await m.query(
      'runId' in where
        ? `SELECT * FROM workflow_recipients WHERE run_id = $1 AND state = 'waiting' ORDER BY due_at, seq LIMIT $2 FOR UPDATE`
        : `SELECT w.* FROM workflow_recipients w JOIN workflow_runs r ON r.id = w.run_id
            WHERE w.account_id = $1 AND w.state = 'waiting' AND r.status = 'running'
            ORDER BY w.due_at, w.seq LIMIT $2 FOR UPDATE OF w`,
      ['runId' in where ? where.runId : where.accountId, limit],
    );
    return rows.map(toRecipient);
  }

  async unfinishedCount(m: EntityManager, runId: string): Promise<number> {
    const [row] = await m.query(`SELECT count(*) AS n FROM workflow_recipients WHERE run_id = $1 AND state <> ALL($2)`, [runId, FINAL_STATES]);
    return Number(row.n);
  }

  /** Cancels the run's recipients that have no call under way; returns them. */
  async cancelIdle(m: EntityManager, runId: string, at: Date): Promise<RecipientRecord[]> {
    // TypeORM answers an UPDATE with [rows, count].
    const [rows] = await m.query(
      `UPDATE workflow_recipients SET state = 'cancelled', due_at = NULL, reason = 'run_cancelled', updated_at = $2
        WHERE run_id = $1 AND state IN ('pending', 'waiting', 'retrying') RETURNING *`,
      [runId, at],
    );
    return rows.map(toRecipient);
  }

  async listRecipients(runId: string, state: RecipientState | undefined, limit: number, after: string): Promise<{ items: RecipientRecord[]; hasMore: boolean; next: string }> {
    const params: unknown[] = [runId, limit + 1];
    const where = ['run_id = $1'];
    if (state) where.push(`state = ANY($${params.push(INTERNAL_OF[state])})`);
    if (after) where.push(`seq < $${params.push(after)}`);
    const rows = (await this.db.query(`SELECT * FROM workflow_recipients WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT $2`, params)).map(toRecipient);
    const items = rows.slice(0, limit);
    const hasMore = rows.length > limit;
    return { items, hasMore, next: hasMore ? (items.at(-1)?.seq ?? '') : '' };
  }

  enqueue(m: EntityManager, event: WebhookEvent): Promise<void> {
    return enqueueOutbox(m, webhookEventSubject(event.type), event, event.id);
  }
}

export function emptyCounts(): RunCounts {
  return { total: 0, pending: 0, in_progress: 0, retrying: 0, succeeded: 0, failed: 0, suppressed: 0, cancelled: 0 };
}
