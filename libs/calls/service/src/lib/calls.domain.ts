import { Inject, Injectable, Optional } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { CallActivity, callSucceeded, callsV1, CSAT_COMMENT_MAX, CSAT_SCALES, CSAT_SOURCES, csatRating, EndReason, eventVariables, FlowTransition, projectLimitReached, InjectedCallEvent, LIVE, RingingActivity, SPEND_PERIODS, TranscriptTurn, WebhookEvent, WebhookEventData, WebhookEventType } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { Bus, OutboxRelay } from '@parley/messaging';
import { serviceLogger } from '@parley/observability';
import { defaultProjectId, newId, Page } from '@parley/persistence';
import { AppError, pagePosition } from '@parley/rpc';
import { BUS, CONFIG } from '@parley/runtime';
import { periodStart, SPEND_AMOUNT } from './spend-periods';
import { canMove, CallStatus, isLive } from './call-state';
import { AnalysisClaim, CallFilters, CallRating, CallsRepository, isIdempotencyKeyClash, NewCall, ProjectCeilings, SpendCeiling } from './calls.repository';
import { CallUsage } from './call-usage';
import { CallEntity, CallTurnEntity } from './entities';
import { decimal } from './price-table';
import { CommandOutcome, MediaCommands } from './media-commands';
import { stuckCallTransition } from './stuck-calls';

export interface Transition {
  status: CallStatus;
  endReason?: EndReason;
  failureReason?: string;
}

export interface TurnInput extends TranscriptTurn {
  /** Who said it (a rendezvous seat's name); absent on calls with one person. */
  speaker?: string;
  /** The media stream the turn was spoken on and its number there (from 1); absent: an unnumbered turn. */
  stream?: { id: string; seq: number };
  /** An agent turn that answered the caller: end of their speech to its first audio, ms; absent: not measured. */
  responseLatencyMs?: number;
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
/** The most numbers one CheckDoNotCall takes. */
export const DO_NOT_CALL_CHECK_LIMIT = 1000;
/** The most calls ListRinging answers: a console shows the oldest waiting; more than this is a queue, not a list. */
export const RINGING_LIST_LIMIT = 200;

/** Waiting for a person's claim: what ListRinging lists (once its media is attached) and a claim answers. */
export function awaitsClaim(c: CallEntity): boolean {
  return c.claimable && c.status === 'ringing' && c.claimedBy === null;
}

/**
 * Call records, the call state machine and the transcript. Every change and the events it causes
 * (`call.started`, `call.ended`, `call.failed`, `call.transcript.updated`, …) commit in one transaction through
 * the outbox, so webhooks never miss one; after commit the change is broadcast live for event streams (observers).
 * Every end of a call, however it came (API, carrier, the agent, the reaper, a drain), is a `transition` to a final
 * state: once committed, the media worker holding the call's stream is commanded to close it (MediaCommands).
 */
@Injectable()
export class CallsDomain {
  private readonly log = serviceLogger('calls');

  constructor(
    private readonly repository: CallsRepository,
    private readonly relay: OutboxRelay,
    @Inject(BUS) private readonly bus: Bus,
    @Inject(CONFIG) private readonly config: ServiceConfig,
    private readonly media: MediaCommands,
    /** Prices the carrier's minutes as a call ends; absent (some tests): costs are left as recorded. */
    @Optional() private readonly usage?: CallUsage,
  ) {}

  /**
   * Inserts a new live call, refusing it (402) when the account is at its concurrent-call ceiling, and (409) when
   * its Idempotency-Key is already another call's: one being set up right now (a known key is looked up first,
   * with findByIdempotencyKey). A key older than the retention is taken back from its old call. `beforeCommit`
   * runs last inside the transaction; throwing from it leaves nothing recorded.
   */
  async insert(input: NewCall, beforeCommit?: () => void): Promise<CallEntity> {
    const outcome = await this.repository.transaction(async (m): Promise<{ call: CallEntity } | { refused: AppError }> => {
      // The key is read before the account's lock, which then covers only the ceilings and the insert (every create of
      // the account waits for it: bench/workflows.mjs). Two creates racing with one key are settled by its unique index.
      const keyTaken = !!input.idempotencyKey && (await this.repository.idempotencyKeyTaken(m, input.accountId, input.idempotencyKey));
      // Serialise per account so the concurrent-call ceilings (the account's, its projects') hold under parallel requests.
      await this.repository.lockAccount(m, input.accountId);
      const live = await this.repository.countLive(m, input.accountId);
      if (live >= this.config.MAX_CONCURRENT_CALLS) {
        throw new AppError('plan_limit_reached', `This account already has ${live} live calls, its ceiling (MAX_CONCURRENT_CALLS).`);
      }
      // The project's ceilings under the lock: which limits were reported reached is decided one create at a time.
      // Refusals are committed, not thrown: their project.limit_reached (and mark) are kept.
      const projectId = input.projectId ?? defaultProjectId(input.accountId);
      const ceilings = await this.repository.projectCeilings(m, input.accountId, projectId);
      const refused = ceilings
        ? ((await this.spendRefusal(m, input.accountId, projectId, ceilings)) ?? (await this.liveCallsRefusal(m, input.accountId, projectId, ceilings)))
        : undefined;
      if (refused) return { refused };
      const keyInUse = () => new AppError('idempotency_conflict', 'A request with this Idempotency-Key is still running; retry shortly.');
      if (keyTaken) throw keyInUse();
      const entity = await this.repository.insert(m, newId('call'), input).catch((error: unknown) => {
        throw isIdempotencyKeyClash(error) ? keyInUse() : error;
      });
      beforeCommit?.();
      return { call: entity };
    });
    if ('refused' in outcome) {
      this.relay.nudge();
      throw outcome.refused;
    }
    const { call } = outcome;
    this.broadcast(call.id, { kind: 'status', call: toCallMessage(call) });
    return call;
  }

  /**
   * Stores the ceilings of a project (the gateway owns projects and puts them with every change). A spending ceiling
   * is in the price table's currency (calls' costs are): another currency is refused (422 on budget.spend.currency).
   */
  async putProjectCeilings(accountId: string, projectId: string, maxLiveCalls: number, spend: SpendCeiling | null = null): Promise<void> {
    if (spend) {
      const problems = [
        ...(SPEND_AMOUNT.test(spend.amount) && !/^0*(\.0*)?$/.test(spend.amount) ? [] : [{ field: 'budget.spend.amount', message: 'must be a decimal amount above 0 such as "250.00"' }]),
        ...(SPEND_PERIODS.includes(spend.period) ? [] : [{ field: 'budget.spend.period', message: `must be one of ${SPEND_PERIODS.join(', ')}` }]),
        ...(this.usage && spend.currency !== this.usage.prices.currency
          ? [{ field: 'budget.spend.currency', message: `must be ${this.usage.prices.currency}, the currency calls are priced in on this deployment (PRICES_FILE)` }]
          : []),
      ];
      if (problems.length) throw AppError.validation(problems);
    }
    return this.repository.putProjectCeilings(accountId, projectId, maxLiveCalls, spend);
  }

  /**
   * The 402 a new call of the project gets at `max_live_calls` live calls (checked only at creation, as every ceiling:
   * a live call is never cut). The first refusal at the ceiling enqueues `project.limit_reached`; the next one
   * does not, until a call is admitted under the ceiling again (the project went back under it).
   */
  private async liveCallsRefusal(m: EntityManager, accountId: string, projectId: string, ceilings: ProjectCeilings): Promise<AppError | undefined> {
    if (!ceilings.maxLiveCalls) return undefined;
    const live = await this.repository.countLiveInProject(m, accountId, projectId);
    const reported = ceilings.reached.includes('max_live_calls');
    if (live < ceilings.maxLiveCalls) {
      if (reported) await this.repository.markLimitReached(m, projectId, 'max_live_calls', false);
      return undefined;
    }
    if (!reported) {
      await this.repository.markLimitReached(m, projectId, 'max_live_calls', true);
      await this.limitReached(m, accountId, { project_id: projectId, limit: 'max_live_calls', ceiling: ceilings.maxLiveCalls });
    }
    return new AppError(
      'plan_limit_reached',
      `Project ${projectId} already has ${live} live calls, its ceiling (max_live_calls: ${ceilings.maxLiveCalls}). Live calls are not cut; new ones are accepted once fewer are live.`,
      undefined,
      { limit: 'max_live_calls', project_id: projectId, ceiling: ceilings.maxLiveCalls },
    );
  }

  /**
   * Once the project's calls created in the current period (UTC day or month) cost the ceiling or more: their costs as
   * recorded so far, live calls' carrier minutes included, read from the project's running total (CallUsage.projectSpend). `project.limit_reached` is enqueued
   * with the first refusal of each period (the mark is set by one transaction only, however many refuse at once).
   */
  private async spendRefusal(m: EntityManager, accountId: string, projectId: string, ceilings: ProjectCeilings): Promise<AppError | undefined> {
    const ceiling = ceilings.spend;
    if (!ceiling) return undefined;
    // Every deployable that records calls provides CallUsage; only tests leave it out.
    if (!this.usage) throw new AppError('internal_error', 'Spending ceilings cannot be checked in this process.');
    const from = periodStart(ceiling.period, new Date());
    const spent = await this.usage.projectSpend(m, accountId, projectId, ceiling.period, from);
    if (!(await this.repository.atLeast(m, spent.amount, ceiling.amount))) return undefined;
    if (ceilings.spendReportedFrom?.getTime() !== from.getTime() && (await this.repository.markSpendReported(m, projectId, from))) {
      await this.limitReached(m, accountId, { project_id: projectId, limit: 'spend', ceiling: ceiling.amount, currency: ceiling.currency, period: ceiling.period });
    }
    return new AppError(
      'plan_limit_reached',
      `Project ${projectId} has spent ${spent.amount} ${spent.currency} this ${ceiling.period}, its ceiling (spend: ${ceiling.amount} ${ceiling.currency} a ${ceiling.period}). Live calls are not cut; new ones are accepted again next ${ceiling.period} or once the ceiling is raised.`,
      undefined,
      { limit: 'spend', project_id: projectId, ceiling: ceiling.amount, currency: ceiling.currency, period: ceiling.period, spent: spent.amount },
    );
  }

  private async limitReached(m: EntityManager, accountId: string, data: WebhookEventData['project.limit_reached']): Promise<void> {
    await this.repository.enqueue(m, projectLimitReached(newId('evt'), accountId, data));
  }

  /** The call an earlier create with this Idempotency-Key made (within the retention); undefined when none. */
  async findByIdempotencyKey(accountId: string, key: string): Promise<CallEntity | undefined> {
    return (await this.repository.findByIdempotencyKey(accountId, key)) ?? undefined;
  }

  async get(accountId: string, id: string): Promise<CallEntity> {
    const call = await this.repository.find(accountId, id);
    if (!call) throw AppError.notFound('call');
    return call;
  }

  /** A call placed through `carrier`, by id alone: for callbacks the carrier signed, which carry no account. */
  async findForCarrier(carrier: string, id: string): Promise<CallEntity | undefined> {
    return (await this.repository.findForCarrier(carrier, id)) ?? undefined;
  }

  /** The call a carrier knows by its own id; undefined when Parley has no such call. */
  async findByCarrierCall(carrier: string, carrierCallId: string): Promise<CallEntity | undefined> {
    return (await this.repository.findByCarrierCall(carrier, carrierCallId)) ?? undefined;
  }

  list(accountId: string, limit: number, after: string, filters: CallFilters): Promise<Page<CallEntity>> {
    return this.repository.list(accountId, limit, pagePosition(after), filters);
  }

  /**
   * Changes a call under a row lock: `decide` sees the current record and returns the next state (undefined:
   * no change), may also set fields on it; illegal moves are a 409 conflict. Events follow the new state.
   */
  async transition(accountId: string, id: string, decide: (call: CallEntity) => Transition | undefined): Promise<CallEntity> {
    const events: WebhookEvent[] = [];
    let wasAwaitingClaim = false;
    const { call, changed } = await this.repository.transaction(async (m) => {
      const { call: current, now } = await this.lockAt(m, accountId, id);
      wasAwaitingClaim = awaitsClaim(current);
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
        // Decided by the end reason, or left to the analysis when an extracted field decides (null until then).
        if (current.successCriteria) current.successful = callSucceeded(current.successCriteria, current.endReason);
        // Same transaction as call.ended: the post-call analysis is due once the end is committed (PostCallAnalysis),
        // or, while a media stream is attached, once it stops (see mediaStopped): its last turns are written by then.
        if (wantsAnalysis(current)) current.analysisDueAt = this.mediaAttached(current, now) ? new Date(now.getTime() + ANALYSIS_WAITS_FOR_MEDIA_MS) : now;
      }
      await this.repository.save(m, current);
      if (!isLive(current.status)) await this.usage?.settleCarrier(m, current);
      events.push(...(await this.emitFor(m, current)));
      return { call: current, changed: true };
    });
    if (changed) {
      this.afterCommit(call, events);
      if (!isLive(call.status)) void this.media.endStream(call);
      if (wasAwaitingClaim && !isLive(call.status)) this.broadcastRinging(call, { kind: 'gone', call: toCallMessage(call), reason: 'ended' });
    }
    return call;
  }

  /**
   * A person claims a ringing claimable call, decided under the call's row lock: of concurrent claims (any replica)
   * exactly one finds it unclaimed; the others get 409. A phone call is answered (`in_progress`, call.started); a
   * rendezvous stays `ringing` until the claimer's browser takes the free seat. Either leaves the ringing list.
   */
  async claim(accountId: string, id: string, by: string): Promise<CallEntity> {
    const events: WebhookEvent[] = [];
    const call = await this.repository.transaction(async (m) => {
      const { call: current, now } = await this.lockAt(m, accountId, id);
      refuseClaim(current);
      current.claimedBy = by;
      current.claimedAt = now;
      current.updatedAt = now;
      if (!current.seats) {
        current.status = 'in_progress';
        current.answeredAt = now;
      }
      await this.repository.save(m, current);
      events.push(...(await this.emitFor(m, current)));
      return current;
    });
    this.afterCommit(call, events);
    this.broadcastRinging(call, { kind: 'gone', call: toCallMessage(call), reason: 'claimed' });
    return call;
  }

  /** The account's calls waiting for a person (RINGING_LIST_LIMIT at most), oldest first. */
  listRinging(accountId: string): Promise<CallEntity[]> {
    return this.repository.listRinging(accountId, RINGING_LIST_LIMIT);
  }

  /** A claimable call started ringing with its media attached: consoles watching the account show it. */
  announceRinging(call: CallEntity): void {
    if (awaitsClaim(call)) this.broadcastRinging(call, { kind: 'ringing', call: toCallMessage(call) });
  }

  /** Sets fields that are not a state change (carrier call id, transfer, recording, media liveness). */
  async amend(accountId: string, id: string, change: (call: CallEntity, m: EntityManager) => Promise<WebhookEvent[]> | WebhookEvent[]): Promise<CallEntity> {
    const events: WebhookEvent[] = [];
    const call = await this.repository.transaction(async (m) => {
      const { call: current, now } = await this.lockAt(m, accountId, id);
      events.push(...(await change(current, m)));
      current.updatedAt = now;
      await this.repository.save(m, current);
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
    await this.repository.analysisDueNowIfWaitingForMedia(accountId, id, ANALYSIS_WAITS_FOR_MEDIA_MS / 1000);
  }

  /** A worker reported media within MEDIA_LOST_SECONDS: its stream may still be delivering turns. */
  private mediaAttached(call: CallEntity, now: Date): boolean {
    return call.lastMediaAt !== null && now.getTime() - call.lastMediaAt.getTime() < this.config.MEDIA_LOST_SECONDS * 1000;
  }

  /** Marks a browser token as used; false when it was already (each opens one connection). */
  redeemRealtimeToken(jti: string, callId: string): Promise<boolean> {
    return this.repository.redeemRealtimeToken(jti, callId);
  }

  /**
   * A media stream attached (its worker is where commands go from now on). Returns the events injected that no
   * conversation took yet, in injection order, for the stream's conversation; they are handed over once (a later
   * stream of the call, a resume, does not get them again).
   */
  attachMedia(accountId: string, id: string, mediaWorker: string | null): Promise<InjectedCallEvent[]> {
    return this.repository.attachMedia(accountId, id, mediaWorker);
  }

  /** Media liveness, without locking or rewriting the row (sent every few seconds per call). */
  async touchMedia(accountId: string, id: string): Promise<CallEntity> {
    await this.repository.touchMedia(accountId, id);
    return this.get(accountId, id);
  }

  /**
   * Appends a turn to the call's transcript, after those stored (the worker sends them in the order spoken), with
   * `call.transcript.updated`. Idempotent for a numbered turn: one whose stream and number the call holds already
   * is a retry, acknowledged without a second row or event. A call that ended less than TRANSCRIPT_GRACE_MS ago
   * still takes turns (the ones being spoken as it ended); after that its transcript is closed (409).
   */
  async appendTurn(accountId: string, id: string, turn: TurnInput, now = new Date()): Promise<number> {
    const { stream, speaker, grounding, responseLatencyMs, ...fields } = turn;
    const call = await this.amend(accountId, id, async (current, m) => {
      if (!isLive(current.status) && (!current.endedAt || now.getTime() - current.endedAt.getTime() > TRANSCRIPT_GRACE_MS)) {
        throw new AppError('conflict', `The call has ${current.status === 'failed' ? 'failed' : 'ended'}; its transcript is closed.`);
      }
      const numbered = stream && stream.seq > 0 ? { streamId: stream.id, streamSeq: stream.seq } : { streamId: null, streamSeq: null };
      const latency = turn.role === 'assistant' && responseLatencyMs && responseLatencyMs > 0 ? Math.round(responseLatencyMs) : null;
      const inserted = await this.repository.insertTurnOnce(m, {
        callId: id,
        accountId,
        seq: current.turns + 1,
        ...fields,
        ...numbered,
        speaker: speaker || null,
        grounding: grounding ?? [],
        responseLatencyMs: latency,
      });
      // Stored already: a retried append of the same stream turn.
      if (!inserted) return [];
      current.turns += 1;
      current.transcriptAvailable = true;
      // The call's own turn measures, which the analytics read from the calls' index (docs/analytics.md); each
      // measured latency also goes to call_turn_latencies.
      if (turn.role === 'assistant') {
        current.agentTurns += 1;
        if (turn.interrupted) current.bargeIns += 1;
      }
      if (latency !== null) await this.repository.insertTurnLatency(m, current, current.turns, latency);
      return [
        await this.emit(m, current, 'call.transcript.updated', { role: turn.role, text: turn.text, language: turn.language || undefined, ...(speaker ? { speaker } : {}) }),
      ];
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
    const written = await this.repository.transaction(async (m) => {
      const call = await this.lock(m, accountId, id);
      if (call.analysedAt) return undefined;
      const now = new Date();
      // An extracted field of the agent's success criteria decides the verdict now (the end reason alone did before).
      const successful = call.successCriteria ? callSucceeded(call.successCriteria, call.endReason ?? '', result.extracted) : null;
      const fields = { summary: result.summary, extracted: result.extracted, analysisModel: result.model, analysedAt: now, analysisError: null, analysisDueAt: null, successful, updatedAt: now };
      await this.repository.update(m, accountId, id, fields);
      Object.assign(call, fields);
      const event = await this.emit(m, call, 'call.analysed', { summary: result.summary, extracted: result.extracted, model: result.model, successful });
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
   * takes it up again only once the lease ran out. The returned lease is the claim's fencing token for
   * `rescheduleAnalysis` and `unscheduleAnalysis`.
   */
  claimDueAnalyses(now: Date, limit: number, leaseUntil: Date): Promise<AnalysisClaim[]> {
    return limit > 0 ? this.repository.claimDueAnalyses(now, limit, leaseUntil) : Promise.resolve([]);
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
    return this.repository.transaction(async (m) => {
      const call = await this.lock(m, accountId, id);
      if (call.analysedAt || call.analysisError || call.analysisDueAt?.getTime() !== lease.getTime()) {
        return { outcome: 'stale' as const, attempts: call.analysisAttempts };
      }
      const attempts = call.analysisAttempts + 1;
      const giveUp = attempts >= maxAttempts;
      await this.repository.update(
        m,
        accountId,
        id,
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
    await this.repository.rescheduleLeased(accountId, id, lease, dueAt);
  }

  async transcript(accountId: string, id: string): Promise<{ call: CallEntity; turns: CallTurnEntity[]; transitions: FlowTransition[] }> {
    const call = await this.get(accountId, id);
    const [turns, transitions] = await Promise.all([this.repository.turns(accountId, id), this.repository.flowTransitions(id)]);
    return { call, turns, transitions };
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
      await this.repository.addDoNotCall(m, accountId, recorded, call.id);
      return [await this.emit(m, call, 'call.opt_out', { number: recorded })];
    });
    return recorded;
  }

  isDoNotCall(accountId: string, number: string): Promise<boolean> {
    return this.repository.isDoNotCall(accountId, number);
  }

  /**
   * Which of `numbers` (at most DO_NOT_CALL_CHECK_LIMIT) are on the account's do-not-call list, each once. A number
   * that is not on it (whatever its form) is simply not listed.
   */
  async listedDoNotCall(accountId: string, numbers: string[]): Promise<string[]> {
    if (numbers.length > DO_NOT_CALL_CHECK_LIMIT) {
      throw AppError.validation([{ field: 'numbers', message: `at most ${DO_NOT_CALL_CHECK_LIMIT} numbers per check` }]);
    }
    return this.repository.listedDoNotCall(accountId, [...new Set(numbers.filter((n) => n !== ''))]);
  }

  /** The agent invoked a function: emits call.tool.called; a numbered report (`stream`) the call has taken already is a retry and emits nothing. */
  async toolCalled(accountId: string, id: string, data: WebhookEventData['call.tool.called'], stream?: { id: string; seq: number }): Promise<void> {
    await this.amend(accountId, id, async (call, m) => {
      if (stream && stream.seq > 0 && !(await this.repository.claimToolCall(m, id, stream))) return [];
      return [await this.emit(m, call, 'call.tool.called', data)];
    });
  }

  /**
   * Records a satisfaction rating of the call from `source` and enqueues `csat.received` in the same transaction.
   * One per call and source: the same rating again (scale, score and comment) answers the stored one (`created`
   * false, no second event); another one is refused (409 `conflict`). A call of another account is 404. Ratings
   * are taken whatever the call's state: a survey runs at the end of the call, a form after it.
   */
  async recordRating(
    accountId: string,
    callId: string,
    input: { source: string; scale?: number; score: number; comment?: string | null },
  ): Promise<{ rating: CallRating; created: boolean }> {
    const scale = input.scale || 5;
    const comment = input.comment ? input.comment : null;
    const invalid: { field: string; message: string }[] = [];
    if (!(CSAT_SOURCES as readonly string[]).includes(input.source)) invalid.push({ field: 'source', message: `must be one of ${CSAT_SOURCES.join(', ')}` });
    if (!(CSAT_SCALES as readonly number[]).includes(scale)) invalid.push({ field: 'scale', message: `must be one of ${CSAT_SCALES.join(', ')}` });
    else if (!Number.isInteger(input.score) || input.score < 1 || input.score > scale) invalid.push({ field: 'score', message: `must be a whole number from 1 to ${scale}` });
    if (comment !== null && comment.length > CSAT_COMMENT_MAX) invalid.push({ field: 'comment', message: `must be at most ${CSAT_COMMENT_MAX} characters` });
    if (invalid.length) throw AppError.validation(invalid);
    const call = await this.get(accountId, callId);
    const events: WebhookEvent[] = [];
    const result = await this.repository.transaction(async (m) => {
      const fields = { accountId, callId, source: input.source, scale, score: input.score, comment };
      const stored = await this.repository.insertRating(m, { id: newId('csat'), ...fields });
      if (stored) {
        events.push(
          await this.emit(m, call, 'csat.received', {
            rating_id: stored.id,
            rating: csatRating(stored.score, stored.scale),
            score: stored.score,
            scale: stored.scale,
            source: stored.source,
            ...(stored.comment !== null ? { comment: stored.comment } : {}),
          }),
        );
        return { rating: stored, created: true };
      }
      const existing = await this.repository.ratingOf(m, callId, input.source);
      if (!existing) throw new AppError('conflict', 'The rating could not be recorded; retry.');
      if (existing.scale !== scale || existing.score !== input.score || existing.comment !== comment) {
        throw new AppError('conflict', `The call already has a different rating from source ${input.source} (${existing.id}); a rating is recorded once per call and source.`);
      }
      return { rating: existing, created: false };
    });
    if (events.length) {
      this.relay.nudge();
      for (const event of events) this.broadcast(call.id, { kind: 'event', event });
    }
    return result;
  }

  /** Commands the media worker running the call to leave `message` on the answering machine, then hang up. */
  leaveVoicemail(call: CallEntity, message: string): Promise<CommandOutcome> {
    return this.media.leaveVoicemail(call, message);
  }

  /**
   * A client's event for the live call. Under the call's lock its payload's fields are merged into the call's
   * variables (as the conversation sees them: eventVariables) and the event is kept with the call; it is broadcast for
   * observers (event streams), then handed to the media worker holding the call's stream, whose conversation acts on
   * it. `delivered`: the worker took it (it is no longer kept). Otherwise (no stream yet, the stream finished, the
   * worker unreachable) the conversation has not taken it yet: the next stream that attaches gets it (AttachMedia's
   * pending events). Kept before it is sent, so an attach that runs meanwhile takes it rather than miss it; a worker
   * that gets it both ways takes it once (by its id).
   */
  async inject(accountId: string, id: string, name: string, payload: Record<string, unknown>): Promise<{ injected: InjectedCallEvent; delivered: boolean }> {
    const injected: InjectedCallEvent = { id: newId('cev'), name, payload, created_at: new Date().toISOString() };
    const call = await this.amend(accountId, id, async (current, m) => {
      if (!isLive(current.status)) throw new AppError('conflict', `The call has already ${current.status === 'failed' ? 'failed' : 'ended'}.`);
      current.variables = { ...current.variables, ...eventVariables(payload) };
      await this.repository.keepPendingEvent(m, id, injected);
      return [];
    });
    this.broadcast(id, { kind: 'injected', call_id: id, injected });
    const delivered = (await this.media.injectEvent(call, injected)) === 'delivered';
    if (delivered) await this.repository.dropPendingEvent(id, injected.id);
    return { injected, delivered };
  }

  /**
   * The call's conversation flow moved: the move is stored after the others, what it captured is merged into the
   * call's variables (as text), and event streams hear it (`flow`; not a webhook event). A numbered report
   * (`stream`) the call holds already is a retry: acknowledged, nothing stored or broadcast again.
   */
  async flowTransitioned(accountId: string, id: string, transition: FlowTransition, stream?: { id: string; seq: number }): Promise<void> {
    let stored = false;
    await this.amend(accountId, id, async (call, m) => {
      stored = await this.repository.insertFlowTransition(m, id, transition, stream);
      if (stored && transition.captured) call.variables = { ...call.variables, ...eventVariables(transition.captured) };
      return [];
    });
    if (stored) this.broadcast(id, { kind: 'flow', call_id: id, transition });
  }

  /**
   * The reaper's pass: fails every live call `stuckCallTransition` condemns (`media_lost`, `no_media`), at most
   * 100 per pass, and returns them. Ages are measured on the database's clock (`last_media_at` is written with
   * its `now()`), and each call is re-judged under its row lock. One call that cannot be changed is logged and
   * skipped; it does not stop the others.
   */
  async failStuckCalls(): Promise<CallEntity[]> {
    const limits = { stuckSeconds: this.config.CALL_STUCK_SECONDS, mediaLostSeconds: this.config.MEDIA_LOST_SECONDS };
    const candidates = await this.repository.stuckCandidates(limits);
    const failed: CallEntity[] = [];
    for (const c of candidates) {
      try {
        let condemned = false;
        const call = await this.transition(c.accountId, c.id, (current) => {
          const next = stuckCallTransition(current, c.now, limits);
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
      project_id: call.projectId ?? defaultProjectId(call.accountId),
      // Routing only (never delivered): the workflows service follows its runs' calls by it.
      ...(call.workflowRunId ? { workflow: { run_id: call.workflowRunId, recipient_id: call.workflowRecipientId ?? '' } } : {}),
    };
    await this.repository.enqueue(m, event as WebhookEvent);
    return event as WebhookEvent;
  }

  private async lock(m: EntityManager, accountId: string, id: string): Promise<CallEntity> {
    return (await this.lockAt(m, accountId, id)).call;
  }

  /** The call under its row lock, with the database's clock (see CallsRepository.lockAt); 404 when there is none. */
  private async lockAt(m: EntityManager, accountId: string, id: string): Promise<{ call: CallEntity; now: Date }> {
    const locked = await this.repository.lockAt(m, accountId, id);
    if (!locked) throw AppError.notFound('call');
    return locked;
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

  private broadcastRinging(call: CallEntity, activity: RingingActivity): void {
    this.bus.broadcast(LIVE.ringing(call.accountId).name, activity).catch((e) => this.log.warn({ err: e, callId: call.id }, 'live broadcast failed'));
  }

  private broadcast(callId: string, activity: CallActivity): void {
    this.bus.broadcast(LIVE.callActivity(callId).name, activity).catch((e) => this.log.warn({ err: e, callId }, 'live broadcast failed'));
  }
}

/** Why a claim cannot win (409), checked under the call's lock. */
function refuseClaim(c: CallEntity): void {
  if (!isLive(c.status)) throw new AppError('conflict', `The call is over (${c.endReason ?? c.status}).`);
  if (!c.claimable) throw new AppError('conflict', 'The call is not claimable: only inbound calls to simple agents and rendezvous are answered by a claim.');
  if (c.claimedBy !== null) throw new AppError('conflict', `The call was claimed already (by ${c.claimedBy}).`);
  if (c.status !== 'ringing' || c.lastMediaAt === null) throw new AppError('conflict', `The call is not ringing yet (${c.status}): nobody is on the line to answer.`);
}

/** Post-call analysis runs for a call that is over and was answered (or has a transcript). */
function wantsAnalysis(c: CallEntity): boolean {
  return !isLive(c.status) && (c.answeredAt !== null || c.turns > 0);
}

function durationSeconds(c: CallEntity): number {
  return c.answeredAt && c.endedAt ? (c.endedAt.getTime() - c.answeredAt.getTime()) / 1000 : 0;
}

/** The carrier's billed minutes: each started minute of the answered time counts (docs/analytics.md, Usage and cost). */
export function billedMinutes(c: CallEntity): number {
  return Math.ceil(durationSeconds(c) / 60);
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
    successful: c.successful ?? undefined,
    recording_content_type: c.recordingContentType ?? '',
    recording_duration_seconds: c.recordingDurationSeconds ?? 0,
    answered_by: c.answeredBy ?? '',
    summary: c.summary ?? '',
    extracted_json: c.extracted ? JSON.stringify(c.extracted) : '',
    seats: c.seats ?? [],
    claimable: c.claimable,
    claimed_by: c.claimedBy ?? '',
    claimed_at: iso(c.claimedAt),
    workflow_run_id: c.workflowRunId ?? '',
    workflow_recipient_id: c.workflowRecipientId ?? '',
    project_id: c.projectId ?? defaultProjectId(c.accountId),
    usage: {
      carrier_seconds: durationSeconds(c),
      carrier_minutes: billedMinutes(c),
      stt_seconds: c.usageSttMs / 1000,
      llm_input_tokens: c.usageLlmInputTokens,
      llm_output_tokens: c.usageLlmOutputTokens,
      tts_characters: c.usageTtsCharacters,
    },
    cost: {
      amount: decimal(c.cost),
      currency: c.costCurrency ?? '',
      carrier: decimal(c.costCarrier),
      stt: decimal(c.costStt),
      llm: decimal(c.costLlm),
      tts: decimal(c.costTts),
    },
  };
}
