import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { ClientGrpc } from '@nestjs/microservices';
import { DataSource, EntityManager } from 'typeorm';
import { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { AGENTS_V1, agentsV1, CallDirection, WebhookEvent, webhookEventSubject, WebhookEventData, WebhookEventType } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { enqueueOutbox, OutboxRelay } from '@parley/messaging';
import { serviceLogger } from '@parley/observability';
import { keysetPage, newId, Page } from '@parley/persistence';
import { AppError, pagePosition, RpcClient } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { canMove, CallStatus, EndReason, isLive, reasonForEnd } from './call-state';
import { CallEntity } from './entities';

export const AGENTS_GRPC = 'AGENTS_GRPC';
const E164 = /^\+[1-9]\d{6,14}$/;

export interface CreateCall {
  agentId: string;
  to: string;
  from?: string;
  variables?: Record<string, string>;
  metadata?: Record<string, string>;
}

export interface CallFilters {
  agentId?: string;
  status?: string;
  direction?: string;
  createdAfter?: string;
  createdBefore?: string;
}

/**
 * Call records and the call state machine. Every change and the events it causes (`call.started`,
 * `call.ended`, `call.failed`) commit in one transaction, through the outbox, so webhooks never miss one.
 */
@Injectable()
export class CallsDomain implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly agents: RpcClient<agentsV1.AgentsServiceClient>;
  private readonly log = serviceLogger('calls');
  private reaper: NodeJS.Timeout | undefined;

  constructor(
    private readonly dataSource: DataSource,
    private readonly relay: OutboxRelay,
    @Inject(AGENTS_GRPC) grpc: ClientGrpc,
    @Inject(CONFIG) private readonly config: ServiceConfig,
  ) {
    this.agents = new RpcClient(grpc, AGENTS_V1, 'agents', config.RPC_TIMEOUT_MS);
  }

  onApplicationBootstrap(): void {
    this.reaper = setInterval(() => void this.failStuckCalls().catch((e) => this.log.warn({ err: e }, 'reaper pass failed')), 5_000);
    this.reaper.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.reaper);
  }

  async create(accountId: string, input: CreateCall): Promise<CallEntity> {
    const problems = [
      ...(E164.test(input.to) ? [] : [{ field: 'to', message: 'must be an E.164 number such as +15551234567' }]),
      ...(input.from === undefined || input.from === '' || E164.test(input.from) ? [] : [{ field: 'from', message: 'must be an E.164 number' }]),
    ];
    if (problems.length) throw AppError.validation(problems);
    try {
      await this.agents.call('getAgent', (s, md) => s.getAgent({ account_id: accountId, id: input.agentId }, md));
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') {
        throw AppError.validation([{ field: 'agent_id', message: 'names no agent of this account' }]);
      }
      throw error;
    }
    const call = await this.dataSource.transaction(async (m) => {
      // Serialise per account so the concurrent-call ceiling holds under parallel requests.
      await m.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`calls:${accountId}`]);
      const [{ live }] = await m.query(
        `SELECT count(*)::int AS live FROM calls WHERE account_id = $1 AND status IN ('queued', 'ringing', 'in_progress')`,
        [accountId],
      );
      if (live >= this.config.MAX_CONCURRENT_CALLS) {
        throw new AppError('plan_limit_reached', `This account already has ${live} live calls, its ceiling (MAX_CONCURRENT_CALLS).`);
      }
      const now = new Date();
      const entity = Object.assign(new CallEntity(), {
        id: newId('call'),
        accountId,
        agentId: input.agentId,
        direction: 'outbound' as CallDirection,
        to: input.to,
        from: input.from ?? '',
        status: 'queued' as CallStatus,
        endReason: null,
        failureReason: null,
        carrier: null,
        carrierCallId: null,
        variables: input.variables ?? {},
        metadata: input.metadata ?? {},
        turns: 0,
        recordingAvailable: false,
        transcriptAvailable: false,
        createdAt: now,
        updatedAt: now,
        answeredAt: null,
        endedAt: null,
      });
      await m.insert(CallEntity, entity as QueryDeepPartialEntity<CallEntity>);
      return entity;
    });
    return call;
  }

  async get(accountId: string, id: string): Promise<CallEntity> {
    const call = await this.dataSource.getRepository(CallEntity).findOneBy({ id, accountId });
    if (!call) throw AppError.notFound('call');
    return call;
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

  /** Ends a live call from the API: `hangup` once answered, `canceled` before; give-up records `no_answer`. */
  async end(accountId: string, id: string, reason: 'hangup' | 'given_up'): Promise<CallEntity> {
    return this.change(accountId, id, (call) => {
      if (!isLive(call.status)) throw new AppError('conflict', `The call has already ${call.status === 'failed' ? 'failed' : 'ended'}.`);
      if (reason === 'given_up' && call.status === 'in_progress') {
        throw new AppError('conflict', 'The call was answered; end it instead of giving up.');
      }
      return { status: 'ended', endReason: reason === 'given_up' ? 'no_answer' : reasonForEnd(call.status) };
    });
  }

  /** A call with no progress for CALL_STUCK_SECONDS fails with reason no_media, so none stays live forever. */
  async failStuckCalls(now = new Date()): Promise<number> {
    const stale: { id: string; account_id: string }[] = await this.dataSource.query(
      `SELECT id, account_id FROM calls WHERE status IN ('queued', 'ringing', 'in_progress') AND updated_at < $1 LIMIT 100`,
      [new Date(now.getTime() - this.config.CALL_STUCK_SECONDS * 1000)],
    );
    for (const s of stale) {
      await this.change(s.account_id, s.id, (call) =>
        isLive(call.status) ? { status: 'failed', endReason: 'no_media', failureReason: `No media for ${this.config.CALL_STUCK_SECONDS} s` } : undefined,
      );
    }
    return stale.length;
  }

  private async change(
    accountId: string,
    id: string,
    decide: (call: CallEntity) => { status: CallStatus; endReason?: EndReason; failureReason?: string } | undefined,
  ): Promise<CallEntity> {
    const call = await this.dataSource.transaction(async (m) => {
      const current = await m
        .getRepository(CallEntity)
        .createQueryBuilder('c')
        .setLock('pessimistic_write')
        .where('c.id = :id AND c.account_id = :accountId', { id, accountId })
        .getOne();
      if (!current) throw AppError.notFound('call');
      const next = decide(current);
      if (!next) return current;
      if (!canMove(current.status, next.status)) throw new AppError('conflict', `A ${current.status} call cannot become ${next.status}.`);
      const now = new Date();
      current.status = next.status;
      current.updatedAt = now;
      if (next.status === 'in_progress') current.answeredAt = now;
      if (!isLive(next.status)) {
        current.endedAt = now;
        current.endReason = next.endReason ?? 'completed';
        current.failureReason = next.failureReason ?? null;
      }
      await m.save(CallEntity, current);
      await this.emitFor(m, current);
      return current;
    });
    this.relay.nudge();
    return call;
  }

  private async emitFor(m: EntityManager, call: CallEntity): Promise<void> {
    if (call.status === 'in_progress') {
      await this.emit(m, call, 'call.started', { agent_id: call.agentId, direction: call.direction, to: call.to, from: call.from });
    }
    if (call.status === 'failed') {
      await this.emit(m, call, 'call.failed', { reason: call.endReason ?? 'failed', message: call.failureReason ?? undefined });
    }
    if (!isLive(call.status)) {
      const duration = call.answeredAt && call.endedAt ? (call.endedAt.getTime() - call.answeredAt.getTime()) / 1000 : 0;
      await this.emit(m, call, 'call.ended', { duration_seconds: duration, turns: call.turns, end_reason: call.endReason ?? 'completed' });
    }
  }

  private emit<T extends WebhookEventType>(m: EntityManager, call: CallEntity, type: T, data: WebhookEventData[T]): Promise<void> {
    const event: WebhookEvent<T> = {
      id: newId('evt'),
      type,
      call_id: call.id,
      created_at: new Date().toISOString(),
      data,
      account_id: call.accountId,
      agent_id: call.agentId,
    };
    return enqueueOutbox(m, webhookEventSubject(type), event, event.id);
  }
}
