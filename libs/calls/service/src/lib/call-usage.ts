import { Inject, Injectable } from '@nestjs/common';
import { AppError } from '@parley/rpc';
import { CallUsageRepository, CallUsageTotals, SpendFilter } from './call-usage.repository';
import { carrierPrice, decimal, PriceTable, unitPrice, USAGE_KINDS, UsageKind } from './price-table';
import { CallEntity } from './entities';
import { EntityManager } from 'typeorm';
import { SpendPeriod } from '@parley/contracts';
import { periodEnd } from './spend-periods';

/** The operator's price table (PRICES_FILE), read once at boot. */
export const PRICES = Symbol('PRICES');

/** One line of a media stream's usage report: a running total since the stream started. */
export interface UsageReport {
  kind: string;
  provider: string;
  model: string;
  quantity: number;
}

/** The most lines one report may carry (a call uses a few vendors; more is a fault). */
const MAX_ITEMS = 64;

/**
 * Usage and cost of calls: the media worker's usage reports (running totals per stream) priced with the operator's
 * table and summed onto the call; the carrier's cost when the call ends; an account's spend over a period.
 */
@Injectable()
export class CallUsage {
  constructor(
    private readonly repository: CallUsageRepository,
    @Inject(PRICES) readonly prices: PriceTable,
  ) {}

  /**
   * Records a stream's usage so far (RecordUsage). Each line keeps the largest total it was told, so a retried,
   * repeated or reordered report changes nothing; the call's usage and cost become the sums of its lines.
   */
  async record(accountId: string, callId: string, streamId: string, items: UsageReport[]): Promise<CallUsageTotals> {
    if (!streamId) throw new AppError('invalid_request', 'A usage report names its media stream (stream_id).');
    if (items.length > MAX_ITEMS) throw new AppError('invalid_request', `A usage report carries at most ${MAX_ITEMS} lines.`);
    const priced = items.map((item, i) => {
      if (!(USAGE_KINDS as readonly string[]).includes(item.kind)) throw new AppError('invalid_request', `items[${i}].kind must be one of ${USAGE_KINDS.join(', ')}.`);
      if (!Number.isSafeInteger(item.quantity) || item.quantity < 0) throw new AppError('invalid_request', `items[${i}].quantity must be a whole number ≥ 0.`);
      const kind = item.kind as UsageKind;
      return { kind, provider: item.provider, model: item.model, quantity: item.quantity, ...unitPrice(this.prices, kind, item.provider, item.model) };
    });
    return this.repository.transaction(async (m) => {
      if (!(await this.repository.lockCall(m, accountId, callId))) throw AppError.notFound('call');
      return this.repository.record(m, accountId, callId, streamId, priced, this.prices.currency);
    });
  }

  /** The carrier's cost of a call ending in transaction `m` (under its row lock), written onto `call` as well. */
  async settleCarrier(m: EntityManager, call: CallEntity): Promise<void> {
    Object.assign(call, await this.repository.settleCarrier(m, call.id, carrierPrice(this.prices, call.carrier), this.prices.currency));
  }

  /**
   * What an account spent on the calls created in [from, to) (optionally one project's, agent's or direction's): their costs
   * as recorded so far, live calls' carrier minutes included. An exact decimal string in `currency`.
   */
  async spendOf(filter: SpendFilter): Promise<{ amount: string; currency: string }> {
    const amount = await this.repository.spend(filter, this.prices.carrier, carrierPrice(this.prices, null));
    return { amount: decimal(amount), currency: this.prices.currency };
  }

  /**
   * What a project spent in the period of `ceiling` starting at `from` (its calls created then), as spendOf counts it,
   * read from the running total in transaction `m`: what CreateCall checks a spending ceiling against.
   */
  async projectSpend(m: EntityManager, accountId: string, projectId: string, period: SpendPeriod, from: Date): Promise<{ amount: string; currency: string }> {
    const amount = await this.repository.projectSpend(m, accountId, projectId, period, from, periodEnd(period, from), this.prices.carrier, carrierPrice(this.prices, null));
    return { amount: decimal(amount), currency: this.prices.currency };
  }
}
