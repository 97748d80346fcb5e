import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { CallDirection, FlowTransition, FlowTransitionKind, InjectedCallEvent, ProjectLimit, SpendPeriod, SuccessCriteria, WebhookEvent, webhookEventSubject } from '@parley/contracts';
import { enqueueOutbox } from '@parley/messaging';
import { keysetPage, Page, Position, projectCondition } from '@parley/persistence';
import { CallEntity, CallTurnEntity, Seat } from './entities';

export interface NewCall {
  accountId: string;
  agentId: string;
  direction: CallDirection;
  to: string;
  from: string;
  status: 'queued' | 'ringing';
  carrier: string | null;
  carrierCallId: string | null;
  recordingEnabled: boolean;
  variables: Record<string, string>;
  metadata: Record<string, string>;
  /** The client's Idempotency-Key of the create (outbound calls); at most one call per key and account. */
  idempotencyKey?: string | null;
  /** A rendezvous' seats (none taken yet); absent on any other call. */
  seats?: Seat[] | null;
  /** Answered by a person's claim (an inbound call to a `simple` agent, a rendezvous); absent: false. */
  claimable?: boolean;
  /** The project the call counts against (its agent's); absent: the account's default project. */
  projectId?: string;
  /** The workflow run and recipient that placed the call (outbound calls of the workflows service); absent: none. */
  workflowRunId?: string | null;
  workflowRecipientId?: string | null;
  /** The agent's `post_call.success` (absent: none): the call's `successful` follows it. */
  successCriteria?: SuccessCriteria | null;
}

export interface CallFilters {
  agentId?: string;
  status?: string;
  direction?: string;
  createdAfter?: string;
  createdBefore?: string;
  /** Only the calls placed by this workflow run. */
  workflowRunId?: string;
  /** Only the calls of this project. */
  projectId?: string;
  /** Only the calls with this verdict (undecided ones never match). */
  successful?: boolean;
}

/** A spending ceiling: new calls are refused once the period's calls cost `amount` or more. */
export interface SpendCeiling {
  amount: string;
  currency: string;
  period: SpendPeriod;
}

/** What the calls service enforces of a project's ceilings (the gateway owns projects and puts them here). */
export interface ProjectCeilings {
  /** 0: no ceiling. */
  maxLiveCalls: number;
  /** The limits already reported reached (project.limit_reached), until the project is back under them. */
  reached: ProjectLimit[];
  spend: SpendCeiling | null;
  /** The start of the period whose spending ceiling was reported reached; null: none this period. */
  spendReportedFrom: Date | null;
}

/** A call whose post-call analysis is due (claimed by one worker until `lease`). */
export interface AnalysisClaim {
  accountId: string;
  callId: string;
  agentId: string;
  /** The claim's `analysis_due_at`: when another worker may take the call up; the claim's fencing token. */
  lease: Date;
}

/** A live call the reaper may fail, and the database's clock when it was picked. */
export interface StuckCandidate {
  id: string;
  accountId: string;
  now: Date;
}

export interface CarrierCheck {
  id: string;
  accountId: string;
  carrier: string;
  carrierCallId: string;
}

/** A satisfaction rating of a call (call_ratings). */
export interface CallRating {
  id: string;
  accountId: string;
  callId: string;
  source: string;
  scale: number;
  score: number;
  comment: string | null;
  createdAt: Date;
}

interface RatingRow {
  id: string;
  account_id: string;
  call_id: string;
  source: string;
  scale: number;
  score: number;
  comment: string | null;
  created_at: Date;
}

const toRating = (r: RatingRow): CallRating => ({
  id: r.id,
  accountId: r.account_id,
  callId: r.call_id,
  source: r.source,
  scale: r.scale,
  score: r.score,
  comment: r.comment,
  createdAt: new Date(r.created_at),
});

interface FlowTransitionRow {
  from_node: string;
  to_node: string;
  kind: FlowTransitionKind;
  edge_index: number;
  edge_when: string | null;
  event: string | null;
  captured: Record<string, string | number | boolean> | null;
  at_ms: string;
}

interface PendingEventRow {
  event_id: string;
  name: string;
  payload: Record<string, unknown>;
  created_at: Date;
}

/** How long a call answers to its Idempotency-Key (the contract's idempotency retention). */
const IDEMPOTENCY_RETENTION = `interval '24 hours'`;

/** Whether an insert failed because another call took its Idempotency-Key meanwhile (the unique index calls_idempotency_key). */
export function isIdempotencyKeyClash(error: unknown): boolean {
  const driver = (error as { driverError?: { code?: string; constraint?: string } } | undefined)?.driverError;
  return driver?.code === '23505' && driver.constraint === 'calls_idempotency_key';
}

const LIVE_STATUSES = `('queued', 'ringing', 'in_progress')`;

/** A call's columns by property, each as JSON: a Date, a JSON column changed in place and a number compare by value. */
function columnValues(m: EntityManager, call: CallEntity): Map<string, string> {
  const values = new Map<string, string>();
  for (const column of m.connection.getMetadata(CallEntity).columns) values.set(column.propertyName, JSON.stringify(column.getEntityValue(call) ?? null));
  return values;
}

/**
 * The calls service's tables (calls, call_turns, do_not_call, call_tool_calls, call_flow_transitions,
 * call_pending_events) and its outbox.
 * Methods that take a manager run inside the caller's transaction (CallsRepository.transaction); the others run on
 * their own.
 */
@Injectable()
export class CallsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Each call read by lockAt, its columns as read (columnValues): what save() compares with. */
  private readonly asLocked = new WeakMap<CallEntity, Map<string, string>>();

  transaction<T>(work: (m: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  /** Serialises the transaction with every other one that locks this account (until it ends). */
  async lockAccount(m: EntityManager, accountId: string): Promise<void> {
    await m.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`calls:${accountId}`]);
  }

  async countLive(m: EntityManager, accountId: string): Promise<number> {
    const [{ live }] = await m.query(`SELECT count(*)::int AS live FROM calls WHERE account_id = $1 AND status IN ${LIVE_STATUSES}`, [accountId]);
    return live;
  }

  /** The live calls of one project; calls stored before projects (project_id null) are the default project's. */
  async countLiveInProject(m: EntityManager, accountId: string, projectId: string): Promise<number> {
    const [{ live }] = await m.query(
      `SELECT count(*)::int AS live FROM calls WHERE account_id = $1 AND status IN ${LIVE_STATUSES} AND ${projectCondition('project_id', accountId, projectId, '$2')}`,
      [accountId, projectId],
    );
    return live;
  }

  /** The project's ceilings as the gateway last put them, and the limits reported reached since; null: none put. */
  async projectCeilings(m: EntityManager, accountId: string, projectId: string): Promise<ProjectCeilings | null> {
    const [row]: {
      max_live_calls: number;
      reached: ProjectLimit[];
      spend_amount: string | null;
      spend_currency: string | null;
      spend_period: SpendPeriod | null;
      spend_reported_from: Date | null;
    }[] = await m.query(
      `SELECT max_live_calls, reached, spend_amount::text, spend_currency, spend_period, spend_reported_from
         FROM project_ceilings WHERE account_id = $1 AND project_id = $2`,
      [accountId, projectId],
    );
    if (!row) return null;
    const spend = row.spend_amount && row.spend_currency && row.spend_period ? { amount: row.spend_amount, currency: row.spend_currency, period: row.spend_period } : null;
    return { maxLiveCalls: row.max_live_calls, reached: row.reached, spend, spendReportedFrom: row.spend_reported_from };
  }

  /** Replaces the project's ceilings; a changed ceiling is reported again when it is reached. */
  async putProjectCeilings(accountId: string, projectId: string, maxLiveCalls: number, spend: SpendCeiling | null): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO project_ceilings (project_id, account_id, max_live_calls, spend_amount, spend_currency, spend_period) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (project_id) DO UPDATE
         SET max_live_calls = $3, spend_amount = $4, spend_currency = $5, spend_period = $6, reached = '{}', spend_reported_from = NULL, updated_at = now()
        WHERE project_ceilings.account_id = $2`,
      [projectId, accountId, maxLiveCalls, spend?.amount ?? null, spend?.currency ?? null, spend?.period ?? null],
    );
  }

  /**
   * Records that the spending ceiling was reported reached for the period starting `from`; false when another
   * transaction recorded it first (the row lock makes this one wait for it, then find nothing to change).
   */
  async markSpendReported(m: EntityManager, projectId: string, from: Date): Promise<boolean> {
    const marked: unknown[] = await m.query(
      `WITH marked AS (
         UPDATE project_ceilings SET spend_reported_from = $2 WHERE project_id = $1 AND spend_reported_from IS DISTINCT FROM $2 RETURNING project_id
       ) SELECT project_id FROM marked`,
      [projectId, from],
    );
    return marked.length > 0;
  }

  /** Whether exact decimal `amount` is at least `ceiling` (compared in numeric, never in floating point). */
  async atLeast(m: EntityManager, amount: string, ceiling: string): Promise<boolean> {
    const [{ reached }]: { reached: boolean }[] = await m.query(`SELECT $1::numeric >= $2::numeric AS reached`, [amount, ceiling]);
    return reached;
  }

  /** Records that `limit` was reported reached (or that the project is back under it). */
  async markLimitReached(m: EntityManager, projectId: string, limit: ProjectLimit, reached: boolean): Promise<void> {
    await m.query(
      reached
        ? `UPDATE project_ceilings SET reached = array_append(reached, $2) WHERE project_id = $1 AND NOT ($2 = ANY (reached))`
        : `UPDATE project_ceilings SET reached = array_remove(reached, $2) WHERE project_id = $1`,
      [projectId, limit],
    );
  }

  /** Whether another call holds this Idempotency-Key; a key older than the retention is first taken back from its call. */
  async idempotencyKeyTaken(m: EntityManager, accountId: string, key: string): Promise<boolean> {
    // One statement: the SELECT sees the rows as they were before the CTE's UPDATE, so the call it took the key back
    // from is left out by id.
    const taken: unknown[] = await m.query(
      `WITH expired AS (UPDATE calls SET idempotency_key = NULL WHERE account_id = $1 AND idempotency_key = $2 AND created_at < now() - ${IDEMPOTENCY_RETENTION} RETURNING id)
       SELECT 1 FROM calls WHERE account_id = $1 AND idempotency_key = $2 AND id NOT IN (SELECT id FROM expired)`,
      [accountId, key],
    );
    return taken.length > 0;
  }

  /**
   * Inserts a new call as `id`, stamped with the database's clock (like every later change: the reaper measures a
   * new call's age from it) in the same statement.
   */
  async insert(m: EntityManager, id: string, input: NewCall): Promise<CallEntity> {
    const [{ created_at: createdAt }]: { created_at: Date }[] = await m.query(
      `INSERT INTO calls (id, account_id, agent_id, direction, to_number, from_number, status, carrier, carrier_call_id,
                          recording_enabled, variables, metadata, idempotency_key, seats, claimable, workflow_run_id,
                          workflow_recipient_id, project_id, success_criteria, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, now(), now())
       RETURNING created_at`,
      [
        id,
        input.accountId,
        input.agentId,
        input.direction,
        input.to,
        input.from,
        input.status,
        input.carrier,
        input.carrierCallId,
        input.recordingEnabled,
        JSON.stringify(input.variables),
        JSON.stringify(input.metadata),
        input.idempotencyKey || null,
        input.seats ? JSON.stringify(input.seats) : null,
        input.claimable ?? false,
        input.workflowRunId || null,
        input.workflowRecipientId || null,
        input.projectId ?? null,
        input.successCriteria ? JSON.stringify(input.successCriteria) : null,
      ],
    );
    return Object.assign(new CallEntity(), {
      ...input,
      idempotencyKey: input.idempotencyKey || null,
      seats: input.seats ?? null,
      claimable: input.claimable ?? false,
      workflowRunId: input.workflowRunId || null,
      workflowRecipientId: input.workflowRecipientId || null,
      projectId: input.projectId ?? null,
      successCriteria: input.successCriteria ?? null,
      successful: null,
      claimedBy: null,
      claimedAt: null,
      id,
      endReason: null,
      failureReason: null,
      turns: 0,
      recordingAvailable: false,
      transcriptAvailable: false,
      recordingKey: null,
      recordingContentType: null,
      recordingDurationSeconds: null,
      lastMediaAt: null,
      mediaWorker: null,
      answeredBy: null,
      transferredTo: null,
      transferStreamId: null,
      createdAt,
      updatedAt: createdAt,
      answeredAt: null,
      endedAt: null,
      summary: null,
      extracted: null,
      analysisModel: null,
      analysedAt: null,
      analysisAttempts: 0,
      analysisError: null,
      analysisDueAt: null,
      ...NO_USAGE,
    });
  }

  /** The call an earlier create with this Idempotency-Key made (within the retention); null when none. */
  findByIdempotencyKey(accountId: string, key: string): Promise<CallEntity | null> {
    return this.dataSource
      .getRepository(CallEntity)
      .createQueryBuilder('c')
      .where(`c.account_id = :accountId AND c.idempotency_key = :key AND c.created_at >= now() - ${IDEMPOTENCY_RETENTION}`, { accountId, key })
      .getOne();
  }

  find(accountId: string, id: string): Promise<CallEntity | null> {
    return this.dataSource.getRepository(CallEntity).findOneBy({ id, accountId });
  }

  /** A call placed through `carrier`, by id alone. */
  findForCarrier(carrier: string, id: string): Promise<CallEntity | null> {
    return this.dataSource.getRepository(CallEntity).findOneBy({ carrier, id });
  }

  findByCarrierCall(carrier: string, carrierCallId: string): Promise<CallEntity | null> {
    return this.dataSource.getRepository(CallEntity).findOneBy({ carrier, carrierCallId });
  }

  list(accountId: string, limit: number, after: Position | undefined, filters: CallFilters): Promise<Page<CallEntity>> {
    const qb = this.dataSource.getRepository(CallEntity).createQueryBuilder('c').where('c.account_id = :accountId', { accountId });
    if (filters.agentId) qb.andWhere('c.agent_id = :agentId', { agentId: filters.agentId });
    if (filters.status) qb.andWhere('c.status = :status', { status: filters.status });
    if (filters.direction) qb.andWhere('c.direction = :direction', { direction: filters.direction });
    if (filters.createdAfter) qb.andWhere('c.created_at >= :createdAfter', { createdAfter: new Date(filters.createdAfter) });
    if (filters.createdBefore) qb.andWhere('c.created_at < :createdBefore', { createdBefore: new Date(filters.createdBefore) });
    if (filters.workflowRunId) qb.andWhere('c.workflow_run_id = :workflowRunId', { workflowRunId: filters.workflowRunId });
    if (filters.projectId) qb.andWhere(projectCondition('c.project_id', accountId, filters.projectId, ':projectId'), { projectId: filters.projectId });
    if (filters.successful !== undefined) qb.andWhere('c.successful = :successful', { successful: filters.successful });
    return keysetPage(qb, 'c', limit, after);
  }

  /**
   * The account's calls waiting for a person, oldest first: claimable, ringing, unclaimed, with their media attached
   * (the caller is on the line; a rendezvous' first seat joined).
   */
  listRinging(accountId: string, limit: number): Promise<CallEntity[]> {
    return this.dataSource
      .getRepository(CallEntity)
      .createQueryBuilder('c')
      .where(`c.account_id = :accountId AND c.status = 'ringing' AND c.claimable AND c.claimed_by IS NULL AND c.last_media_at IS NOT NULL`, { accountId })
      .orderBy('c.created_at', 'ASC')
      .addOrderBy('c.id', 'ASC')
      .limit(limit)
      .getMany();
  }

  /**
   * The call under its row lock, and the database's clock (`now`) in the same statement: the times a change writes
   * (`updated_at` above all) are on the clock the reaper and the reconciler compare them with, whatever this
   * replica's clock says. Null when the account has no such call.
   */
  async lockAt(m: EntityManager, accountId: string, id: string): Promise<{ call: CallEntity; now: Date } | null> {
    const { entities, raw } = await m
      .getRepository(CallEntity)
      .createQueryBuilder('c')
      .addSelect('now()', 'db_now')
      .setLock('pessimistic_write')
      .where('c.id = :id AND c.account_id = :accountId', { id, accountId })
      .getRawAndEntities<{ db_now: Date }>();
    if (!entities[0]) return null;
    this.asLocked.set(entities[0], columnValues(m, entities[0]));
    return { call: entities[0], now: new Date(raw[0].db_now) };
  }

  /**
   * Writes what changed of a call read by lockAt since then: one UPDATE of those columns. (TypeORM's `save` reads the
   * row again to find them: a round trip more in every change of a call, a turn's above all.) A call not read by
   * lockAt is saved whole.
   */
  async save(m: EntityManager, call: CallEntity): Promise<void> {
    const before = this.asLocked.get(call);
    if (!before) return void (await m.save(CallEntity, call));
    const after = columnValues(m, call);
    const changes: Record<string, unknown> = {};
    for (const [property, value] of after) {
      const current = call[property as keyof CallEntity];
      // As save() does, a property left undefined is not written.
      if (current !== undefined && before.get(property) !== value) changes[property] = current;
    }
    this.asLocked.set(call, after);
    if (Object.keys(changes).length) await m.update(CallEntity, { id: call.id }, changes as QueryDeepPartialEntity<CallEntity>);
  }

  /** Writes only `fields` of the call (a locked one: no other column is rewritten). */
  async update(m: EntityManager, accountId: string, id: string, fields: QueryDeepPartialEntity<CallEntity>): Promise<void> {
    await m.update(CallEntity, { id, accountId }, fields);
  }

  /** A customer-facing event, into the outbox of transaction `m`. */
  enqueue(m: EntityManager, event: WebhookEvent): Promise<void> {
    return enqueueOutbox(m, webhookEventSubject(event.type), event, event.id);
  }

  /**
   * Makes an analysis that waits for the call's media stream due now: one due `waitSeconds` after the end and neither
   * claimed nor rescheduled since (the exact time tells).
   */
  async analysisDueNowIfWaitingForMedia(accountId: string, id: string, waitSeconds: number): Promise<void> {
    await this.dataSource.query(
      `UPDATE calls SET analysis_due_at = now()
        WHERE id = $1 AND account_id = $2 AND analysed_at IS NULL AND analysis_error IS NULL
          AND analysis_due_at = ended_at + make_interval(secs => $3)`,
      [id, accountId, waitSeconds],
    );
  }

  /**
   * A media stream attached: media liveness, and the worker that holds it (where commands about the call go). In the
   * same transaction, the call's pending events are taken (deleted) and returned in injection order: the update
   * holds the call's row lock, so an event kept under that lock (keepPendingEvent) is either taken here or sees the
   * new worker.
   */
  async attachMedia(accountId: string, id: string, mediaWorker: string | null): Promise<InjectedCallEvent[]> {
    return this.dataSource.transaction(async (m) => {
      const [, updated]: [unknown, number] = await m.query(`UPDATE calls SET last_media_at = now(), media_worker = $3 WHERE id = $1 AND account_id = $2`, [
        id,
        accountId,
        mediaWorker,
      ]);
      if (!updated) return [];
      const rows: PendingEventRow[] = await m.query(
        `WITH taken AS (DELETE FROM call_pending_events WHERE call_id = $1 RETURNING seq, event_id, name, payload, created_at)
         SELECT event_id, name, payload, created_at FROM taken ORDER BY seq`,
        [id],
      );
      return rows.map((r) => ({ id: r.event_id, name: r.name, payload: r.payload, created_at: new Date(r.created_at).toISOString() }));
    });
  }

  /** Keeps an injected event with the call (in the caller's transaction, under the call's lock) for the next stream. */
  async keepPendingEvent(m: EntityManager, callId: string, event: InjectedCallEvent): Promise<void> {
    await m.query(`INSERT INTO call_pending_events (call_id, event_id, name, payload, created_at) VALUES ($1, $2, $3, $4, $5)`, [
      callId,
      event.id,
      event.name,
      JSON.stringify(event.payload),
      event.created_at,
    ]);
  }

  /** The conversation took the event: it is no longer pending (a no-op when a stream's attach took it already). */
  async dropPendingEvent(callId: string, eventId: string): Promise<void> {
    await this.dataSource.query(`DELETE FROM call_pending_events WHERE call_id = $1 AND event_id = $2`, [callId, eventId]);
  }

  /** Media liveness, without locking or rewriting the row. */
  async touchMedia(accountId: string, id: string): Promise<void> {
    await this.dataSource.query(`UPDATE calls SET last_media_at = now() WHERE id = $1 AND account_id = $2`, [id, accountId]);
  }

  /**
   * Inserts a turn, unless one with its stream and number is stored already (a worker retrying an append may deliver
   * a turn twice): false then, and nothing is written. One statement for the check and the insert.
   */
  async insertTurnOnce(m: EntityManager, t: CallTurnEntity): Promise<boolean> {
    const rows: unknown[] = await m.query(
      `INSERT INTO call_turns (call_id, seq, account_id, role, text, language, start_ms, end_ms, interrupted, stream_id, stream_seq, speaker, grounding, response_latency_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
       ON CONFLICT (call_id, stream_id, stream_seq) WHERE stream_seq IS NOT NULL DO NOTHING
       RETURNING seq`,
      [t.callId, t.seq, t.accountId, t.role, t.text, t.language, t.startMs, t.endMs, t.interrupted, t.streamId, t.streamSeq, t.speaker, JSON.stringify(t.grounding), t.responseLatencyMs],
    );
    return rows.length > 0;
  }

  /** An agent turn's response latency with its call's creation time, agent, direction and project (the analytics' copy). */
  async insertTurnLatency(m: EntityManager, call: CallEntity, seq: number, latencyMs: number): Promise<void> {
    await m.query(
      `INSERT INTO call_turn_latencies (call_id, seq, account_id, call_created_at, agent_id, direction, project_id, latency_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [call.id, seq, call.accountId, call.createdAt, call.agentId, call.direction, call.projectId, latencyMs],
    );
  }

  turns(accountId: string, callId: string): Promise<CallTurnEntity[]> {
    return this.dataSource.getRepository(CallTurnEntity).find({ where: { callId, accountId }, order: { seq: 'ASC' } });
  }

  /**
   * Claims up to `limit` calls whose analysis is due at `now` (oldest first), skipping rows another worker has
   * locked, and leases each until `leaseUntil` (its `analysis_due_at`). One short statement, no transaction left open.
   */
  async claimDueAnalyses(now: Date, limit: number, leaseUntil: Date): Promise<AnalysisClaim[]> {
    const [rows]: [{ id: string; account_id: string; agent_id: string; analysis_due_at: Date }[], number] = await this.dataSource.query(
      `UPDATE calls SET analysis_due_at = $2
        WHERE id IN (SELECT id FROM calls
                      WHERE analysed_at IS NULL AND analysis_due_at IS NOT NULL AND analysis_due_at <= $1 AND analysis_error IS NULL
                      ORDER BY analysis_due_at LIMIT $3 FOR UPDATE SKIP LOCKED)
        RETURNING id, account_id, agent_id, analysis_due_at`,
      [now, leaseUntil, limit],
    );
    return rows.map((r) => ({ callId: r.id, accountId: r.account_id, agentId: r.agent_id, lease: new Date(r.analysis_due_at) }));
  }

  /** Sets the analysis' due time to `dueAt` while `lease` is still the claim's. */
  async rescheduleLeased(accountId: string, id: string, lease: Date, dueAt: Date | null): Promise<void> {
    await this.dataSource.query(`UPDATE calls SET analysis_due_at = $4 WHERE id = $1 AND account_id = $2 AND analysis_due_at = $3`, [
      id,
      accountId,
      lease,
      dueAt,
    ]);
  }

  async addDoNotCall(m: EntityManager, accountId: string, number: string, callId: string): Promise<void> {
    await m.query(`INSERT INTO do_not_call (account_id, number, call_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [accountId, number, callId]);
  }

  async isDoNotCall(accountId: string, number: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(`SELECT 1 FROM do_not_call WHERE account_id = $1 AND number = $2`, [accountId, number]);
    return rows.length > 0;
  }

  /** Which of `numbers` are on the account's do-not-call list (each once), in one statement. */
  async listedDoNotCall(accountId: string, numbers: string[]): Promise<string[]> {
    if (!numbers.length) return [];
    const rows: { number: string }[] = await this.dataSource.query(`SELECT number FROM do_not_call WHERE account_id = $1 AND number = ANY($2)`, [accountId, numbers]);
    return rows.map((r) => r.number);
  }

  /**
   * Records realtime token `jti` as redeemed; false when it was already. Redemptions older than a day are dropped on
   * the way (a token's window is 60 s, so an old row can never match again).
   */
  async redeemRealtimeToken(jti: string, callId: string): Promise<boolean> {
    await this.dataSource.query(`DELETE FROM realtime_tokens WHERE redeemed_at < now() - interval '1 day'`);
    const taken: unknown[] = await this.dataSource.query(`INSERT INTO realtime_tokens (jti, call_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING jti`, [jti, callId]);
    return taken.length > 0;
  }

  /** Records a numbered tool-call report; false when the call has taken it already. */
  async claimToolCall(m: EntityManager, callId: string, stream: { id: string; seq: number }): Promise<boolean> {
    const taken: unknown[] = await m.query(
      `INSERT INTO call_tool_calls (call_id, stream_id, stream_seq) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING call_id`,
      [callId, stream.id, stream.seq],
    );
    return taken.length > 0;
  }

  /**
   * Stores a move of the call's flow after the others; false (nothing stored) when it is numbered (`stream`, seq > 0)
   * and the call holds that stream's number already: a retried report.
   */
  async insertFlowTransition(m: EntityManager, callId: string, t: FlowTransition, stream?: { id: string; seq: number }): Promise<boolean> {
    const numbered = stream && stream.seq > 0 ? stream : { id: '', seq: 0 };
    const stored: unknown[] = await m.query(
      `INSERT INTO call_flow_transitions (call_id, stream_id, stream_seq, from_node, to_node, kind, edge_index, edge_when, event, captured, at_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (call_id, stream_id, stream_seq) WHERE stream_seq > 0 DO NOTHING RETURNING id`,
      [callId, numbered.id, numbered.seq, t.from, t.to, t.kind, t.edge_index, t.when ?? null, t.event ?? null, t.captured ? JSON.stringify(t.captured) : null, t.at_ms],
    );
    return stored.length > 0;
  }

  /**
   * Stores the call's rating from its source; null (nothing stored) when the call has one from that source already
   * (the stored one: ratingOf).
   */
  async insertRating(m: EntityManager, rating: Omit<CallRating, 'createdAt'>): Promise<CallRating | null> {
    const rows: RatingRow[] = await m.query(
      // With the call's creation time, agent and direction: analytics count a rating in its call's period (CallAnalyticsRepository).
      `INSERT INTO call_ratings (id, account_id, call_id, source, scale, score, comment, call_created_at, agent_id, direction)
       SELECT $1, $2, $3, $4, $5, $6, $7, c.created_at, c.agent_id, c.direction FROM calls c WHERE c.id = $3
       ON CONFLICT (call_id, source) DO NOTHING RETURNING *`,
      [rating.id, rating.accountId, rating.callId, rating.source, rating.scale, rating.score, rating.comment],
    );
    return rows[0] ? toRating(rows[0]) : null;
  }

  /** The call's rating from `source`; null when there is none. */
  async ratingOf(m: EntityManager, callId: string, source: string): Promise<CallRating | null> {
    const rows: RatingRow[] = await m.query(`SELECT * FROM call_ratings WHERE call_id = $1 AND source = $2`, [callId, source]);
    return rows[0] ? toRating(rows[0]) : null;
  }

  /** The moves of the call's flow, in the order they were stored. */
  async flowTransitions(callId: string): Promise<FlowTransition[]> {
    const rows: FlowTransitionRow[] = await this.dataSource.query(
      `SELECT from_node, to_node, kind, edge_index, edge_when, event, captured, at_ms FROM call_flow_transitions WHERE call_id = $1 ORDER BY id`,
      [callId],
    );
    return rows.map((r) => ({
      from: r.from_node,
      to: r.to_node,
      kind: r.kind,
      edge_index: r.edge_index,
      ...(r.edge_when !== null ? { when: r.edge_when } : {}),
      ...(r.event !== null ? { event: r.event } : {}),
      ...(r.captured !== null ? { captured: r.captured } : {}),
      // bigint comes back as text.
      at_ms: Number(r.at_ms),
    }));
  }

  /**
   * Up to 100 live, untransferred calls that may be stuck (oldest change first): no progress and no media for
   * `stuckSeconds`, or answered with no media for `mediaLostSeconds`, on the database's clock (returned with each).
   */
  async stuckCandidates(limits: { stuckSeconds: number; mediaLostSeconds: number }): Promise<StuckCandidate[]> {
    const rows: { id: string; account_id: string; now: Date }[] = await this.dataSource.query(
      `SELECT id, account_id, now() AS now FROM calls
        WHERE status IN ${LIVE_STATUSES} AND transferred_to IS NULL
          AND ((updated_at < now() - make_interval(secs => $1) AND (last_media_at IS NULL OR last_media_at < now() - make_interval(secs => $1)))
            OR (status = 'in_progress' AND last_media_at < now() - make_interval(secs => $2)))
        ORDER BY updated_at LIMIT 100`,
      [limits.stuckSeconds, limits.mediaLostSeconds],
    );
    return rows.map((r) => ({ id: r.id, accountId: r.account_id, now: new Date(r.now) }));
  }

  /**
   * Claims up to `limit` live calls with a carrier leg for a look-up at the carrier: their state has not moved for
   * `afterSeconds`, they were not looked up within `afterSeconds`, and they have no live media (an answered call
   * whose media worker still beats is known to be up). Oldest first; rows other replicas hold are skipped, and
   * `carrier_checked_at` is set in the same statement, so each call is looked up at most once per `afterSeconds`.
   */
  async claimCarrierChecks(afterSeconds: number, limit: number): Promise<CarrierCheck[]> {
    const [rows]: [{ id: string; account_id: string; carrier: string; carrier_call_id: string }[], number] = await this.dataSource.query(
      `UPDATE calls SET carrier_checked_at = now()
        WHERE id IN (SELECT id FROM calls
                      WHERE status IN ${LIVE_STATUSES} AND carrier IS NOT NULL AND carrier_call_id IS NOT NULL
                        AND updated_at < now() - make_interval(secs => $1)
                        AND (carrier_checked_at IS NULL OR carrier_checked_at < now() - make_interval(secs => $1))
                        AND (status <> 'in_progress' OR last_media_at IS NULL OR last_media_at < now() - make_interval(secs => $1))
                      ORDER BY coalesce(carrier_checked_at, updated_at) LIMIT $2 FOR UPDATE SKIP LOCKED)
        RETURNING id, account_id, carrier, carrier_call_id`,
      [afterSeconds, limit],
    );
    return rows.map((r) => ({ id: r.id, accountId: r.account_id, carrier: r.carrier, carrierCallId: r.carrier_call_id }));
  }

  /** Calls placed (or ringing in) but not answered yet, across every calls replica. */
  async countPlacedNotAnswered(): Promise<number> {
    const [{ pending }] = await this.dataSource.query(`SELECT count(*)::int AS pending FROM calls WHERE status IN ('queued', 'ringing')`);
    return pending;
  }
}

/** A new call's usage, costs and turn measures (the columns' defaults). */
const NO_USAGE = {
  usageSttMs: 0,
  usageLlmInputTokens: 0,
  usageLlmOutputTokens: 0,
  usageTtsCharacters: 0,
  costCarrier: '0',
  costStt: '0',
  costLlm: '0',
  costTts: '0',
  cost: '0',
  costCurrency: null,
  agentTurns: 0,
  bargeIns: 0,
} satisfies Partial<CallEntity>;
