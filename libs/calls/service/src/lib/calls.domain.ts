import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import {
  CallActivity,
  CallDirection,
  callsV1,
  InjectedCallEvent,
  LIVE,
  WebhookEvent,
  webhookEventSubject,
  WebhookEventData,
  WebhookEventType,
} from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { Bus, enqueueOutbox, OutboxRelay } from '@parley/messaging';
import { serviceLogger } from '@parley/observability';
import { keysetPage, newId, Page } from '@parley/persistence';
import { AppError, pagePosition } from '@parley/rpc';
import { BUS, CONFIG } from '@parley/runtime';
import { canMove, CallStatus, EndReason, isLive } from './call-state';
import { CallEntity, CallTurnEntity } from './entities';
import { stuckCallTransition } from './stuck-calls';

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
}

/** How long a call answers to its Idempotency-Key (the contract's idempotency retention). */
const IDEMPOTENCY_RETENTION = `interval '24 hours'`;

export interface CallFilters {
  agentId?: string;
  status?: string;
  direction?: string;
  createdAfter?: string;
  createdBefore?: string;
}

export interface Transition {
  status: CallStatus;
  endReason?: EndReason;
  failureReason?: string;
}

export interface TurnInput {
  role: 'user' | 'assistant';
  text: string;
  language: string;
  startMs: number;
  endMs: number;
  interrupted: boolean;
  /** The media stream the turn was spoken on and its number there (from 1); absent: an unnumbered turn. */
  stream?: { id: string; seq: number };
}

/**
 * How long after a call ended its transcript still takes turns: the media worker reports the turns that were being
 * spoken when the call ended (the caller hung up mid-answer) as its stream finishes, flushing for at most
 * TRANSCRIPT_FLUSH_MS (media worker) with retries. Well above that bound; anything later is refused.
 */
export const TRANSCRIPT_GRACE_MS = 60_000;
/**
 * How long the analysis of a call that ended with its media stream attached waits for the stream to stop: the media
 * worker's transcript flush bound (15 s) with a margin. The worker's last heartbeat (`stopped`) makes it due at once.
 */
export const ANALYSIS_WAITS_FOR_MEDIA_MS = 20_000;

const LIVE_STATUSES = `('queued', 'ringing', 'in_progress')`;

/**
 * Call records, the call state machine and the transcript. Every change and the events it causes
 * (`call.started`, `call.ended`, `call.failed`, `call.transcript.updated`, …) commit in one transaction through
 * the outbox, so webhooks never miss one; after commit the change is broadcast live for event streams.
 */
@Injectable()
export class CallsDomain {
  private readonly log = serviceLogger('calls');

  constructor(
    private readonly dataSource: DataSource,
    private readonly relay: OutboxRelay,
    @Inject(BUS) private readonly bus: Bus,
    @Inject(CONFIG) private readonly config: ServiceConfig,
  ) {}

  /**
   * Inserts a new live call, refusing it (402) when the account is at its concurrent-call ceiling, and (409) when
   * its Idempotency-Key is already another call's: one being set up right now (a known key is looked up first,
   * with findByIdempotencyKey). A key older than the retention is taken back from its old call. `beforeCommit`
   * runs last inside the transaction; throwing from it leaves nothing recorded.
   */
  async insert(input: NewCall, beforeCommit?: () => void): Promise<CallEntity> {
    const call = await this.dataSource.transaction(async (m) => {
      // Serialise per account so the concurrent-call ceiling holds under parallel requests.
      await m.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`calls:${input.accountId}`]);
      const [{ live }] = await m.query(`SELECT count(*)::int AS live FROM calls WHERE account_id = $1 AND status IN ${LIVE_STATUSES}`, [
        input.accountId,
      ]);
      if (live >= this.config.MAX_CONCURRENT_CALLS) {
        throw new AppError('plan_limit_reached', `This account already has ${live} live calls, its ceiling (MAX_CONCURRENT_CALLS).`);
      }
      if (input.idempotencyKey) {
        await m.query(`UPDATE calls SET idempotency_key = NULL WHERE account_id = $1 AND idempotency_key = $2 AND created_at < now() - ${IDEMPOTENCY_RETENTION}`, [
          input.accountId,
          input.idempotencyKey,
        ]);
        const taken: unknown[] = await m.query(`SELECT 1 FROM calls WHERE account_id = $1 AND idempotency_key = $2`, [input.accountId, input.idempotencyKey]);
        if (taken.length) throw new AppError('idempotency_conflict', 'A request with this Idempotency-Key is still running; retry shortly.');
      }
      // The database's clock, like every later change: the reaper measures a new call's age from it.
      const [{ now }]: { now: Date }[] = await m.query(`SELECT now() AS now`);
      const entity = Object.assign(new CallEntity(), {
        ...input,
        idempotencyKey: input.idempotencyKey || null,
        id: newId('call'),
        endReason: null,
        failureReason: null,
        turns: 0,
        recordingAvailable: false,
        transcriptAvailable: false,
        recordingKey: null,
        recordingContentType: null,
        recordingDurationSeconds: null,
        lastMediaAt: null,
        answeredBy: null,
        transferredTo: null,
        createdAt: now,
        updatedAt: now,
        answeredAt: null,
        endedAt: null,
        summary: null,
        extracted: null,
        analysisModel: null,
        analysedAt: null,
        analysisAttempts: 0,
        analysisError: null,
        analysisDueAt: null,
      });
      await m.insert(CallEntity, entity as QueryDeepPartialEntity<CallEntity>);
      beforeCommit?.();
      return entity;
    });
    this.broadcast(call.id, { kind: 'status', call: toCallMessage(call) });
    return call;
  }

  /** The call an earlier create with this Idempotency-Key made (within the retention); undefined when none. */
  async findByIdempotencyKey(accountId: string, key: string): Promise<CallEntity | undefined> {
    return (
      (await this.dataSource
        .getRepository(CallEntity)
        .createQueryBuilder('c')
        .where(`c.account_id = :accountId AND c.idempotency_key = :key AND c.created_at >= now() - ${IDEMPOTENCY_RETENTION}`, { accountId, key })
        .getOne()) ?? undefined
    );
  }

  async get(accountId: string, id: string): Promise<CallEntity> {
    const call = await this.dataSource.getRepository(CallEntity).findOneBy({ id, accountId });
    if (!call) throw AppError.notFound('call');
    return call;
  }

  /** The call a carrier knows by its own id; undefined when Parley has no such call. */
  /** A call placed through `carrier`, by id alone: for callbacks the carrier signed, which carry no account. */
  async findForCarrier(carrier: string, id: string): Promise<CallEntity | undefined> {
    return (await this.dataSource.getRepository(CallEntity).findOneBy({ carrier, id })) ?? undefined;
  }

  async findByCarrierCall(carrier: string, carrierCallId: string): Promise<CallEntity | undefined> {
    return (await this.dataSource.getRepository(CallEntity).findOneBy({ carrier, carrierCallId })) ?? undefined;
  }

  list(accountId: string, limit: number, after: string, filters: CallFilters): Promise<Page<CallEntity>> {
    const qb = this.dataSource.getRepository(CallEntity).createQueryBuilder('c').where('c.account_id = :accountId', { accountId });
    if (filters.agentId) qb.andWhere('c.agent_id = :agentId', { agentId: filters.agentId });
    if (filters.status) qb.andWhere('c.status = :status', { status: filters.status });
    if (filters.direction) qb.andWhere('c.direction = :direction', { direction: filters.direction });
    if (filters.createdAfter) qb.andWhere('c.created_at >= :createdAfter', { createdAfter: new Date(filters.createdAfter) });
    if (filters.createdBefore) qb.andWhere('c.created_at < :createdBefore', { createdBefore: new Date(filters.createdBefore) });
    return keysetPage(qb, 'c', limit, pagePosition(after));
  }

  /**
   * Changes a call under a row lock: `decide` sees the current record and returns the next state (undefined:
   * no change), may also set fields on it; illegal moves are a 409 conflict. Events follow the new state.
   */
  async transition(accountId: string, id: string, decide: (call: CallEntity) => Transition | undefined): Promise<CallEntity> {
    const events: WebhookEvent[] = [];
    const { call, changed } = await this.dataSource.transaction(async (m) => {
      const { call: current, now } = await this.lockAt(m, accountId, id);
      const next = decide(current);
      if (!next || next.status === current.status) return { call: current, changed: false };
      if (!canMove(current.status, next.status)) throw new AppError('conflict', `A ${current.status} call cannot become ${next.status}.`);
      current.status = next.status;
      current.updatedAt = now;
      if (next.status === 'in_progress') current.answeredAt = now;
      if (!isLive(next.status)) {
        current.endedAt = now;
        // An answering machine took the call and the agent carried on (voicemail `continue`): the record says so.
        current.endReason = next.endReason === 'completed' && current.answeredBy === 'machine' ? 'voicemail' : next.endReason ?? 'completed';
        current.failureReason = next.failureReason ?? null;
        // Same transaction as call.ended: the post-call analysis is due once the end is committed (PostCallAnalysis),
        // or, while a media stream is attached, once it stops (see mediaStopped): its last turns are written by then.
        if (wantsAnalysis(current)) current.analysisDueAt = this.mediaAttached(current, now) ? new Date(now.getTime() + ANALYSIS_WAITS_FOR_MEDIA_MS) : now;
      }
      await m.save(CallEntity, current);
      events.push(...(await this.emitFor(m, current)));
      return { call: current, changed: true };
    });
    if (changed) this.afterCommit(call, events);
    return call;
  }

  /** Sets fields that are not a state change (carrier call id, transfer, recording, media liveness). */
  async amend(accountId: string, id: string, change: (call: CallEntity, m: EntityManager) => Promise<WebhookEvent[]> | WebhookEvent[]): Promise<CallEntity> {
    const events: WebhookEvent[] = [];
    const call = await this.dataSource.transaction(async (m) => {
      const { call: current, now } = await this.lockAt(m, accountId, id);
      events.push(...(await change(current, m)));
      current.updatedAt = now;
      await m.save(CallEntity, current);
      return current;
    });
    if (events.length) this.afterCommit(call, events);
    return call;
  }

  /**
   * The call's media stream stopped, its last turns written: an analysis still waiting for it (due at the end plus
   * ANALYSIS_WAITS_FOR_MEDIA_MS, neither claimed nor rescheduled since: the exact time tells) is due now.
   */
  async mediaStopped(accountId: string, id: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE calls SET analysis_due_at = now()
        WHERE id = $1 AND account_id = $2 AND analysed_at IS NULL AND analysis_error IS NULL
          AND analysis_due_at = ended_at + make_interval(secs => $3)`,
      [id, accountId, ANALYSIS_WAITS_FOR_MEDIA_MS / 1000],
    );
  }

  /** A worker reported media within MEDIA_LOST_SECONDS: its stream may still be delivering turns. */
  private mediaAttached(call: CallEntity, now: Date): boolean {
    return call.lastMediaAt !== null && now.getTime() - call.lastMediaAt.getTime() < this.config.MEDIA_LOST_SECONDS * 1000;
  }

  /** Media liveness, without locking or rewriting the row (sent every few seconds per call). */
  async touchMedia(accountId: string, id: string): Promise<CallEntity> {
    await this.dataSource.query(`UPDATE calls SET last_media_at = now() WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return this.get(accountId, id);
  }

  /**
   * Appends a turn to the call's transcript, after those stored (the worker sends them in the order spoken), with
   * `call.transcript.updated`. Idempotent for a numbered turn: one whose stream and number the call holds already
   * is a retry, acknowledged without a second row or event. A call that ended less than TRANSCRIPT_GRACE_MS ago
   * still takes turns (the ones being spoken as it ended); after that its transcript is closed (409).
   */
  async appendTurn(accountId: string, id: string, turn: TurnInput, now = new Date()): Promise<number> {
    const { stream, ...fields } = turn;
    const call = await this.amend(accountId, id, async (current, m) => {
      if (!isLive(current.status) && (!current.endedAt || now.getTime() - current.endedAt.getTime() > TRANSCRIPT_GRACE_MS)) {
        throw new AppError('conflict', `The call has ${current.status === 'failed' ? 'failed' : 'ended'}; its transcript is closed.`);
      }
      const numbered = stream && stream.seq > 0 ? { streamId: stream.id, streamSeq: stream.seq } : { streamId: null, streamSeq: null };
      if (numbered.streamSeq !== null && (await m.existsBy(CallTurnEntity, { callId: id, ...numbered }))) return [];
      current.turns += 1;
      current.transcriptAvailable = true;
      await m.insert(CallTurnEntity, { callId: id, accountId, seq: current.turns, ...fields, ...numbered });
      return [await this.emit(m, current, 'call.transcript.updated', { role: turn.role, text: turn.text, language: turn.language || undefined })];
    });
    return call.turns;
  }

  /**
   * Writes the post-call analysis onto an ended call and enqueues `call.analysed` in the same transaction, ending its
   * schedule. Only the analysis columns change (never the status). Undefined when the call was analysed already.
   */
  async recordAnalysis(
    accountId: string,
    id: string,
    result: { summary: string | null; extracted: Record<string, string | number | boolean | null>; model: string },
  ): Promise<WebhookEvent | undefined> {
    const written = await this.dataSource.transaction(async (m) => {
      const call = await this.lock(m, accountId, id);
      if (call.analysedAt) return undefined;
      const now = new Date();
      await m.update(
        CallEntity,
        { id, accountId },
        { summary: result.summary, extracted: result.extracted, analysisModel: result.model, analysedAt: now, analysisError: null, analysisDueAt: null, updatedAt: now },
      );
      Object.assign(call, { summary: result.summary, extracted: result.extracted, analysisModel: result.model, analysedAt: now, analysisError: null, analysisDueAt: null, updatedAt: now });
      const event = await this.emit(m, call, 'call.analysed', { summary: result.summary, extracted: result.extracted, model: result.model });
      return { call, event };
    });
    if (!written) return undefined;
    this.relay.nudge();
    this.broadcast(id, { kind: 'event', event: written.event });
    return written.event;
  }

  /**
   * Claims up to `limit` calls whose analysis is due at `now` (oldest first), skipping rows another worker has
   * locked, and leases each until `leaseUntil` (its `analysis_due_at`): another worker (or this one after a crash)
   * takes it up again only once the lease ran out. One short statement, no transaction left open. The returned
   * lease is the claim's fencing token for `rescheduleAnalysis` and `unscheduleAnalysis`.
   */
  async claimDueAnalyses(now: Date, limit: number, leaseUntil: Date): Promise<AnalysisClaim[]> {
    if (limit <= 0) return [];
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

  /**
   * Counts one failed analysis attempt of the claim holding `lease`. Before `maxAttempts` the analysis is due again
   * at `retryAt(attempts)` ('retry'); at `maxAttempts` it is given up: `error` is recorded, the schedule ends
   * ('given_up'). 'stale': the lease is no longer this claim's (expired and claimed again, or the call was analysed
   * or given up meanwhile); nothing is changed.
   */
  async rescheduleAnalysis(
    accountId: string,
    id: string,
    lease: Date,
    error: string,
    maxAttempts: number,
    retryAt: (attempts: number) => Date,
  ): Promise<{ outcome: 'retry' | 'given_up' | 'stale'; attempts: number }> {
    return this.dataSource.transaction(async (m) => {
      const call = await this.lock(m, accountId, id);
      if (call.analysedAt || call.analysisError || call.analysisDueAt?.getTime() !== lease.getTime()) {
        return { outcome: 'stale' as const, attempts: call.analysisAttempts };
      }
      const attempts = call.analysisAttempts + 1;
      const giveUp = attempts >= maxAttempts;
      await m.update(
        CallEntity,
        { id, accountId },
        giveUp ? { analysisAttempts: attempts, analysisError: error.slice(0, 1000), analysisDueAt: null } : { analysisAttempts: attempts, analysisDueAt: retryAt(attempts) },
      );
      return { outcome: giveUp ? ('given_up' as const) : ('retry' as const), attempts };
    });
  }

  /**
   * Ends the schedule of a claim that needs no analysis (nothing to ask, already done), or makes it due at `dueAt`
   * (a claim handed back, e.g. on shutdown). Only while `lease` is still the claim's.
   */
  async unscheduleAnalysis(accountId: string, id: string, lease: Date, dueAt: Date | null = null): Promise<void> {
    await this.dataSource.query(`UPDATE calls SET analysis_due_at = $4 WHERE id = $1 AND account_id = $2 AND analysis_due_at = $3`, [
      id,
      accountId,
      lease,
      dueAt,
    ]);
  }

  async transcript(accountId: string, id: string): Promise<{ call: CallEntity; turns: CallTurnEntity[] }> {
    const call = await this.get(accountId, id);
    const turns = await this.dataSource.getRepository(CallTurnEntity).find({ where: { callId: id, accountId }, order: { seq: 'ASC' } });
    return { call, turns };
  }

  /** The media worker stored the call's recording under `key`; `call.recording.ready` tells the customer. */
  async recordingReady(accountId: string, id: string, key: string, contentType: string, durationSeconds: number): Promise<CallEntity> {
    return this.amend(accountId, id, async (call, m) => {
      call.recordingAvailable = true;
      call.recordingKey = key;
      call.recordingContentType = contentType;
      call.recordingDurationSeconds = durationSeconds;
      return [
        await this.emit(m, call, 'call.recording.ready', {
          recording_url: `${this.config.PUBLIC_URL.replace(/\/+$/, '')}/v1/calls/${call.id}/recording`,
          content_type: contentType,
          duration_seconds: durationSeconds,
        }),
      ];
    });
  }

  /** Adds the number to the account's do-not-call list and tells webhooks (`call.opt_out`). */
  async optOut(accountId: string, id: string, number: string): Promise<string> {
    let recorded = number;
    await this.amend(accountId, id, async (call, m) => {
      recorded = number || (call.direction === 'inbound' ? call.from : call.to);
      if (!recorded) throw AppError.validation([{ field: 'number', message: 'the call has no remote number to record' }]);
      await m.query(`INSERT INTO do_not_call (account_id, number, call_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [accountId, recorded, call.id]);
      return [await this.emit(m, call, 'call.opt_out', { number: recorded })];
    });
    return recorded;
  }

  async isDoNotCall(accountId: string, number: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(`SELECT 1 FROM do_not_call WHERE account_id = $1 AND number = $2`, [accountId, number]);
    return rows.length > 0;
  }

  /** The agent invoked a function (`call.tool.called`). */
  /** Emits call.tool.called; a numbered report (`stream`) the call has taken already is a retry and emits nothing. */
  async toolCalled(accountId: string, id: string, data: WebhookEventData['call.tool.called'], stream?: { id: string; seq: number }): Promise<void> {
    await this.amend(accountId, id, async (call, m) => {
      if (stream && stream.seq > 0) {
        const taken: unknown[] = await m.query(
          `INSERT INTO call_tool_calls (call_id, stream_id, stream_seq) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING call_id`,
          [id, stream.id, stream.seq],
        );
        if (!taken.length) return [];
      }
      return [await this.emit(m, call, 'call.tool.called', data)];
    });
  }

  /** Asks the media worker running the call to leave `message` on the answering machine, then hang up. */
  leaveVoicemail(callId: string, message: string): void {
    this.broadcast(callId, { kind: 'voicemail', call_id: callId, message });
  }

  /** Passes a client's event to whoever runs the live call (the media worker listens on the call's activity). */
  async inject(accountId: string, id: string, name: string, payload: Record<string, unknown>): Promise<InjectedCallEvent> {
    const call = await this.get(accountId, id);
    if (!isLive(call.status)) throw new AppError('conflict', `The call has already ${call.status === 'failed' ? 'failed' : 'ended'}.`);
    const injected: InjectedCallEvent = { id: newId('cev'), name, payload, created_at: new Date().toISOString() };
    this.broadcast(id, { kind: 'injected', call_id: id, injected });
    return injected;
  }

  /**
   * The reaper's pass: fails every live call `stuckCallTransition` condemns (`media_lost`, `no_media`), at most
   * 100 per pass, and returns them. Ages are measured on the database's clock (`last_media_at` is written with
   * its `now()`), and each call is re-judged under its row lock. One call that cannot be changed is logged and
   * skipped; it does not stop the others.
   */
  async failStuckCalls(): Promise<CallEntity[]> {
    const limits = { stuckSeconds: this.config.CALL_STUCK_SECONDS, mediaLostSeconds: this.config.MEDIA_LOST_SECONDS };
    const candidates: { id: string; account_id: string; now: Date }[] = await this.dataSource.query(
      `SELECT id, account_id, now() AS now FROM calls
        WHERE status IN ${LIVE_STATUSES} AND transferred_to IS NULL
          AND ((updated_at < now() - make_interval(secs => $1) AND (last_media_at IS NULL OR last_media_at < now() - make_interval(secs => $1)))
            OR (status = 'in_progress' AND last_media_at < now() - make_interval(secs => $2)))
        ORDER BY updated_at LIMIT 100`,
      [limits.stuckSeconds, limits.mediaLostSeconds],
    );
    const failed: CallEntity[] = [];
    for (const c of candidates) {
      try {
        let condemned = false;
        const call = await this.transition(c.account_id, c.id, (current) => {
          const next = stuckCallTransition(current, new Date(c.now), limits);
          condemned = next !== undefined;
          return next;
        });
        if (condemned) failed.push(call);
      } catch (error) {
        this.log.warn({ err: error, callId: c.id }, 'stuck call could not be failed; the next pass retries it');
      }
    }
    return failed;
  }

  /**
   * Claims up to `limit` live calls with a carrier leg for a look-up at the carrier: their state has not moved for
   * `afterSeconds`, they were not looked up within `afterSeconds`, and they have no live media (an answered call
   * whose media worker still beats is known to be up). Oldest first; rows other replicas hold are skipped, and
   * `carrier_checked_at` is set in the same statement, so each call is looked up at most once per `afterSeconds`.
   */
  async claimCarrierChecks(afterSeconds: number, limit: number): Promise<{ id: string; accountId: string; carrier: string; carrierCallId: string }[]> {
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

  /** A customer-facing event about the call, into the outbox of transaction `m`. */
  async emit<T extends WebhookEventType>(m: EntityManager, call: CallEntity, type: T, data: WebhookEventData[T]): Promise<WebhookEvent> {
    const event: WebhookEvent<T> = {
      id: newId('evt'),
      type,
      call_id: call.id,
      created_at: new Date().toISOString(),
      data,
      account_id: call.accountId,
      agent_id: call.agentId,
    };
    await enqueueOutbox(m, webhookEventSubject(type), event, event.id);
    return event as WebhookEvent;
  }

  private async lock(m: EntityManager, accountId: string, id: string): Promise<CallEntity> {
    return (await this.lockAt(m, accountId, id)).call;
  }

  /**
   * The call under its row lock, and the database's clock (`now`) in the same statement: the times a change writes
   * (`updated_at` above all) are on the clock the reaper and the reconciler compare them with, whatever this
   * replica's clock says.
   */
  private async lockAt(m: EntityManager, accountId: string, id: string): Promise<{ call: CallEntity; now: Date }> {
    const { entities, raw } = await m
      .getRepository(CallEntity)
      .createQueryBuilder('c')
      .addSelect('now()', 'db_now')
      .setLock('pessimistic_write')
      .where('c.id = :id AND c.account_id = :accountId', { id, accountId })
      .getRawAndEntities<{ db_now: Date }>();
    if (!entities[0]) throw AppError.notFound('call');
    return { call: entities[0], now: new Date(raw[0].db_now) };
  }

  private async emitFor(m: EntityManager, call: CallEntity): Promise<WebhookEvent[]> {
    const events: WebhookEvent[] = [];
    if (call.status === 'in_progress') {
      events.push(await this.emit(m, call, 'call.started', { agent_id: call.agentId, direction: call.direction, to: call.to, from: call.from }));
    }
    if (call.status === 'failed') {
      events.push(await this.emit(m, call, 'call.failed', { reason: call.endReason ?? 'failed', message: call.failureReason ?? undefined }));
    }
    if (!isLive(call.status)) {
      events.push(
        await this.emit(m, call, 'call.ended', { duration_seconds: durationSeconds(call), turns: call.turns, end_reason: call.endReason ?? 'completed' }),
      );
    }
    return events;
  }

  private afterCommit(call: CallEntity, events: WebhookEvent[]): void {
    this.relay.nudge();
    for (const event of events) this.broadcast(call.id, { kind: 'event', event });
    this.broadcast(call.id, { kind: 'status', call: toCallMessage(call) });
  }

  private broadcast(callId: string, activity: CallActivity): void {
    this.bus.broadcast(LIVE.callActivity(callId).name, activity).catch((e) => this.log.warn({ err: e, callId }, 'live broadcast failed'));
  }
}

/** A call whose post-call analysis is due (claimed by one worker until `lease`). */
export interface AnalysisClaim {
  accountId: string;
  callId: string;
  agentId: string;
  /** The claim's `analysis_due_at`: when another worker may take the call up; the claim's fencing token. */
  lease: Date;
}

/** Post-call analysis runs for a call that is over and was answered (or has a transcript). */
function wantsAnalysis(c: CallEntity): boolean {
  return !isLive(c.status) && (c.answeredAt !== null || c.turns > 0);
}

function durationSeconds(c: CallEntity): number {
  return c.answeredAt && c.endedAt ? (c.endedAt.getTime() - c.answeredAt.getTime()) / 1000 : 0;
}

const iso = (d: Date | null) => (d ? d.toISOString() : '');

/** The call as it crosses gRPC and the live subjects. */
export function toCallMessage(c: CallEntity): callsV1.Call {
  return {
    id: c.id,
    account_id: c.accountId,
    agent_id: c.agentId,
    direction: c.direction,
    to: c.to,
    from: c.from,
    status: c.status,
    end_reason: c.endReason ?? '',
    carrier: c.carrier ?? '',
    carrier_call_id: c.carrierCallId ?? '',
    variables: c.variables,
    metadata: c.metadata,
    created_at: iso(c.createdAt),
    answered_at: iso(c.answeredAt),
    ended_at: iso(c.endedAt),
    duration_seconds: durationSeconds(c),
    turns: c.turns,
    recording_available: c.recordingAvailable,
    transcript_available: c.transcriptAvailable,
    failure_reason: c.failureReason ?? '',
    recording_enabled: c.recordingEnabled,
    recording_content_type: c.recordingContentType ?? '',
    recording_duration_seconds: c.recordingDurationSeconds ?? 0,
    answered_by: c.answeredBy ?? '',
    summary: c.summary ?? '',
    extracted_json: c.extracted ? JSON.stringify(c.extracted) : '',
  };
}
