import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { SpendPeriod } from '@parley/contracts';
import { defaultProjectId, projectCondition } from '@parley/persistence';
import { UsageKind } from './price-table';

/** One line of a stream's usage, a running total since the stream started, with its unit price. */
export interface PricedUsage {
  kind: UsageKind;
  provider: string;
  model: string;
  quantity: number;
  /** Exact decimal price per `per` units of quantity. */
  price: string;
  per: string;
}

/** A call's usage totals and costs as stored on its row (costs exact decimals). */
export interface CallUsageTotals {
  usageSttMs: number;
  usageLlmInputTokens: number;
  usageLlmOutputTokens: number;
  usageTtsCharacters: number;
  costCarrier: string;
  costStt: string;
  costLlm: string;
  costTts: string;
  cost: string;
  costCurrency: string | null;
}

/** The calls whose spend is summed: the account's calls created in [from, to), optionally of one project, agent or direction. */
export interface SpendFilter {
  accountId: string;
  from: Date;
  to: Date;
  /** Calls stored before projects (project_id null) are the account's default project's. */
  projectId?: string;
  agentId?: string;
  direction?: string;
}

const TOTALS = `usage_stt_ms, usage_llm_input_tokens, usage_llm_output_tokens, usage_tts_characters, cost_carrier::text, cost_stt::text, cost_llm::text, cost_tts::text, cost::text, cost_currency`;

const LIVE = `c.status IN ('queued', 'ringing', 'in_progress')`;

/**
 * A live call's carrier cost so far: each started minute since it was answered at its carrier's price ($n jsonb, $m
 * the default). In numeric throughout (date_part is a double), so the sum stays an exact decimal.
 */
const liveCarrierCost = (rates: string, fallback: string) =>
  `CASE WHEN c.ended_at IS NULL AND c.answered_at IS NOT NULL
        THEN ceil(greatest(date_part('epoch', now() - c.answered_at), 0)::numeric / 60) * coalesce((${rates}::jsonb ->> c.carrier)::numeric, ${fallback}::numeric)
        ELSE 0 END`;

/**
 * Usage and cost in the calls schema: each media stream's running totals per (kind, provider, model) in
 * `call_usage`, and their sums (with the carrier's cost) on the call's row, which the analytics and the spend read.
 * Costs are computed in PostgreSQL's numeric from the unit prices given, so they stay exact.
 */
@Injectable()
export class CallUsageRepository {
  constructor(private readonly dataSource: DataSource) {}

  transaction<T>(work: (m: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  /** Locks the call's row (the call's other changes take the same lock); false when the account has no such call. */
  async lockCall(m: EntityManager, accountId: string, callId: string): Promise<boolean> {
    const rows = (await m.query(`SELECT 1 FROM calls WHERE id = $1 AND account_id = $2 FOR UPDATE`, [callId, accountId])) as unknown[];
    return rows.length > 0;
  }

  /**
   * Keeps each line's largest running total (a retried or late report never lowers it) and its cost at that total,
   * then writes the sums onto the call: usage per kind, cost per kind and in total (the carrier's part as it is).
   */
  async record(m: EntityManager, accountId: string, callId: string, streamId: string, items: PricedUsage[], currency: string): Promise<CallUsageTotals> {
    if (items.length) {
      await m.query(
        `INSERT INTO call_usage (call_id, stream_id, kind, provider, model, account_id, quantity, cost)
         SELECT $1, $2, u.kind, u.provider, u.model, $3, u.quantity, round(u.quantity * u.price / u.per, 10)
           FROM unnest($4::text[], $5::text[], $6::text[], $7::bigint[], $8::numeric[], $9::numeric[]) AS u(kind, provider, model, quantity, price, per)
         ON CONFLICT (call_id, stream_id, kind, provider, model) DO UPDATE
            SET quantity = EXCLUDED.quantity, cost = EXCLUDED.cost, updated_at = now()
          WHERE EXCLUDED.quantity > call_usage.quantity`,
        [
          callId,
          streamId,
          accountId,
          items.map((i) => i.kind),
          items.map((i) => i.provider),
          items.map((i) => i.model),
          items.map((i) => i.quantity),
          items.map((i) => i.price),
          items.map((i) => i.per),
        ],
      );
    }
    const [[row]] = (await m.query(
      `WITH s AS (
         SELECT coalesce(sum(quantity) FILTER (WHERE kind = 'stt_ms'), 0) AS stt_ms,
                coalesce(sum(quantity) FILTER (WHERE kind = 'llm_input_tokens'), 0) AS llm_in,
                coalesce(sum(quantity) FILTER (WHERE kind = 'llm_output_tokens'), 0) AS llm_out,
                coalesce(sum(quantity) FILTER (WHERE kind = 'tts_characters'), 0) AS tts_chars,
                coalesce(sum(cost) FILTER (WHERE kind = 'stt_ms'), 0) AS stt,
                coalesce(sum(cost) FILTER (WHERE kind IN ('llm_input_tokens', 'llm_output_tokens')), 0) AS llm,
                coalesce(sum(cost) FILTER (WHERE kind = 'tts_characters'), 0) AS tts
           FROM call_usage WHERE call_id = $1)
       UPDATE calls c
          SET usage_stt_ms = s.stt_ms, usage_llm_input_tokens = s.llm_in, usage_llm_output_tokens = s.llm_out, usage_tts_characters = s.tts_chars,
              cost_stt = s.stt, cost_llm = s.llm, cost_tts = s.tts, cost = c.cost_carrier + s.stt + s.llm + s.tts,
              cost_currency = coalesce(c.cost_currency, $3)
         FROM s
        WHERE c.id = $1 AND c.account_id = $2
       RETURNING ${TOTALS}`,
      [callId, accountId, currency],
    )) as [Record<string, unknown>[], number];
    return totalsOf(row);
  }

  /**
   * The carrier's cost of a call that just ended (in the transaction that ended it, under its row lock): each
   * started minute from answered to ended at `pricePerMinute`; 0 for a call never answered. Returns the new totals.
   */
  async settleCarrier(m: EntityManager, callId: string, pricePerMinute: string, currency: string): Promise<CallUsageTotals> {
    const [[row]] = (await m.query(
      `UPDATE calls c
          SET cost_carrier = x.carrier, cost = x.carrier + c.cost_stt + c.cost_llm + c.cost_tts, cost_currency = coalesce(c.cost_currency, $3)
         FROM (SELECT CASE WHEN answered_at IS NOT NULL AND ended_at IS NOT NULL
                           THEN ceil(greatest(date_part('epoch', ended_at - answered_at), 0) / 60) * $2::numeric
                           ELSE 0 END AS carrier
                 FROM calls WHERE id = $1) x
        WHERE c.id = $1
       RETURNING ${TOTALS}`,
      [callId, pricePerMinute, currency],
    )) as [Record<string, unknown>[], number];
    return totalsOf(row);
  }

  /**
   * The spend of an account's calls created in [from, to) (optionally one project's, agent's or direction's): the sum of their
   * stored costs, plus, for a call still in progress, its carrier's minutes so far (each started minute, at
   * `carrierRates[carrier]`, else `fallbackRate`). An exact decimal string.
   */
  async spend(f: SpendFilter, carrierRates: Record<string, string>, fallbackRate: string): Promise<string> {
    const params: unknown[] = [f.accountId, f.from.toISOString(), f.to.toISOString(), JSON.stringify(carrierRates), fallbackRate];
    const where = ['c.account_id = $1', 'c.created_at >= $2::timestamptz', 'c.created_at < $3::timestamptz'];
    if (f.projectId) where.push(`coalesce(c.project_id, $${params.push(defaultProjectId(f.accountId))}) = $${params.push(f.projectId)}`);
    if (f.agentId) where.push(`c.agent_id = $${params.push(f.agentId)}`);
    if (f.direction) where.push(`c.direction = $${params.push(f.direction)}`);
    const [row] = (await this.dataSource.query(
      `SELECT coalesce(sum(c.cost + ${liveCarrierCost('$4', '$5')}), 0)::text AS spend FROM calls c WHERE ${where.join(' AND ')}`,
      params,
    )) as { spend: string }[];
    return row.spend;
  }

  /**
   * What a project's calls created in the period starting at `from` cost: the running total of their stored costs
   * (`project_spend`, kept by a trigger on `calls` in the transaction of every change of a call's cost, migration
   * CreateProjectSpend1765900000700), plus the carrier's minutes so far of those still in progress (priced as `spend`
   * prices them). One row and the account's live calls are read, whatever the period holds. In transaction `m`, under
   * the lock the caller holds. An exact decimal string.
   */
  async projectSpend(
    m: EntityManager,
    accountId: string,
    projectId: string,
    period: SpendPeriod,
    from: Date,
    to: Date,
    carrierRates: Record<string, string>,
    fallbackRate: string,
  ): Promise<string> {
    // Calls stored without a project are the default project's: their running total is kept under ''.
    const keys = projectId === defaultProjectId(accountId) ? [projectId, ''] : [projectId];
    const [row] = (await m.query(
      `SELECT (coalesce((SELECT sum(amount) FROM project_spend WHERE account_id = $1 AND project_id = ANY($2::text[]) AND period = $3 AND period_start = $4::timestamptz), 0)
             + coalesce((SELECT sum(${liveCarrierCost('$6', '$7')}) FROM calls c
                          WHERE c.account_id = $1 AND ${LIVE} AND ${projectCondition('c.project_id', accountId, projectId, '$8')}
                            AND c.created_at >= $4::timestamptz AND c.created_at < $5::timestamptz), 0))::text AS spend`,
      [accountId, keys, period, from.toISOString(), to.toISOString(), JSON.stringify(carrierRates), fallbackRate, projectId],
    )) as { spend: string }[];
    return row.spend;
  }
}

function totalsOf(row: Record<string, unknown>): CallUsageTotals {
  return {
    usageSttMs: Number(row['usage_stt_ms']),
    usageLlmInputTokens: Number(row['usage_llm_input_tokens']),
    usageLlmOutputTokens: Number(row['usage_llm_output_tokens']),
    usageTtsCharacters: Number(row['usage_tts_characters']),
    costCarrier: String(row['cost_carrier']),
    costStt: String(row['cost_stt']),
    costLlm: String(row['cost_llm']),
    costTts: String(row['cost_tts']),
    cost: String(row['cost']),
    costCurrency: (row['cost_currency'] as string | null) ?? null,
  };
}
