import { Inject, Injectable, Optional } from '@nestjs/common';
import { ClientGrpc } from '@nestjs/microservices';
import { AGENTS_V1, agentsV1, PostCall, readAgent } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { LlmProvider } from '@parley/llm';
import { serviceLogger } from '@parley/observability';
import { analysePostCall, ExtractionField, PostCallResult, PostCallSettings } from '@parley/post-call';
import { AppError, RpcClient } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { AGENTS_GRPC } from './call-control';
import { CallsDomain } from './calls.domain';
import { AnalysisClaim } from './calls.repository';
import { CallUsage } from './call-usage';
import { CallEntity, CallTurnEntity } from './entities';

export const POST_CALL_LLM = Symbol('POST_CALL_LLM');
/** Optional `() => Date` the worker reads the time from (tests); the wall clock by default. */
export const POST_CALL_CLOCK = Symbol('POST_CALL_CLOCK');

/** Attempts of one call's analysis (the first and the retries) before it is given up. */
export const POST_CALL_MAX_ATTEMPTS = 5;
/** Deadline of one attempt's model requests (a reply that is not JSON is asked for once more). */
export const POST_CALL_DEADLINE_MS = 25_000;
/**
 * How long a claim holds a call: the model deadline plus a margin for the agents RPC and the database. A worker
 * that crashed (or a replica that went away) leaves the call due again once it runs out.
 */
export const POST_CALL_LEASE_MS = POST_CALL_DEADLINE_MS + 20_000;
/** Wait before the 2nd, 3rd, 4th and 5th attempt, after the previous one failed. */
export const POST_CALL_RETRY_DELAYS_MS: readonly number[] = [5_000, 30_000, 120_000, 600_000];
/** Analyses one worker (one replica of the calls service) runs at once. */
export const POST_CALL_CONCURRENCY = 4;
/** How often the worker looks for due calls (CallsRunner). */
export const POST_CALL_POLL_MS = 1_000;

const FIELD_TYPES: readonly ExtractionField['type'][] = ['string', 'number', 'boolean', 'enum'];

export type AnalysisOutcome = 'analysed' | 'already_done' | 'nothing_to_do' | 'gone' | 'retry' | 'given_up' | 'stale' | 'released';

/**
 * The post-call worker of the calls service, decoupled from the bus: the transaction that ends an analysable call
 * sets its `analysis_due_at`; every POST_CALL_POLL_MS (CallsRunner) this worker claims due calls (`FOR UPDATE SKIP LOCKED`, at
 * most POST_CALL_CONCURRENCY in flight, each leased for POST_CALL_LEASE_MS), reads the agent's `post_call` settings
 * from the agents service and the transcript from its own tables, asks the model (no transaction open meanwhile)
 * and writes the summary and typed extraction fields onto the call together with `call.analysed` (one
 * transaction, through the outbox), ending the schedule. A failure is counted and the call is due again after
 * POST_CALL_RETRY_DELAYS_MS; the POST_CALL_MAX_ATTEMPTS-th failure is recorded (`analysis_error`) and ends it.
 * Idempotent: an analysed or given-up call is left alone. The call's status is never touched.
 */
@Injectable()
export class PostCallAnalysis {
  private readonly agents: RpcClient<agentsV1.AgentsServiceClient>;
  private readonly log = serviceLogger('calls');
  private readonly clock: () => Date;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly stopping = new AbortController();
  private claiming = false;

  constructor(
    private readonly calls: CallsDomain,
    @Inject(POST_CALL_LLM) private readonly llm: LlmProvider,
    @Inject(AGENTS_GRPC) grpc: ClientGrpc,
    @Inject(CONFIG) private readonly config: ServiceConfig,
    @Optional() @Inject(POST_CALL_CLOCK) clock?: () => Date,
    /** Records the model's tokens with the call's usage; absent (some tests): not recorded. */
    @Optional() private readonly usage?: CallUsage,
  ) {
    this.agents = new RpcClient(grpc, AGENTS_V1, 'agents', config.RPC_TIMEOUT_MS);
    this.clock = clock ?? (() => new Date());
  }

  /** Stops claiming; analyses in flight are aborted and their calls handed back (due now, no attempt counted). */
  async stop(): Promise<void> {
    this.stopping.abort();
    await Promise.allSettled([...this.inFlight]);
  }

  /** One pass (startDue), resolving with the outcomes once all its analyses are done. */
  async runDue(): Promise<{ callId: string; outcome: AnalysisOutcome }[]> {
    return Promise.all(await this.startDue());
  }

  /**
   * One pass: claims the calls due now (as many as there are free slots) and starts analysing them concurrently;
   * resolves once they are claimed, with each analysis' outcome to come. A pass does not wait for the analyses of
   * the one before: slots already taken are not claimed again.
   */
  async startDue(): Promise<Promise<{ callId: string; outcome: AnalysisOutcome }>[]> {
    if (this.claiming || this.stopping.signal.aborted) return [];
    const free = POST_CALL_CONCURRENCY - this.inFlight.size;
    if (free <= 0) return [];
    this.claiming = true;
    let claims: AnalysisClaim[];
    try {
      const now = this.clock();
      claims = await this.calls.claimDueAnalyses(now, free, new Date(now.getTime() + POST_CALL_LEASE_MS));
    } finally {
      this.claiming = false;
    }
    return claims.map((claim) => {
      const run = this.analyse(claim).then((outcome) => ({ callId: claim.callId, outcome }));
      this.inFlight.add(run);
      void run.finally(() => this.inFlight.delete(run)).catch(() => undefined);
      return run;
    });
  }

  /** One attempt at a claimed call; never throws for a failed attempt (it is counted and rescheduled). */
  async analyse(claim: AnalysisClaim): Promise<AnalysisOutcome> {
    const { accountId, callId, lease } = claim;
    try {
      const { call, turns } = await this.calls.transcript(accountId, callId).catch((error: unknown) => {
        if (error instanceof AppError && error.code === 'not_found') return { call: undefined, turns: [] };
        throw error;
      });
      if (!call) return 'gone';
      if (call.analysedAt || call.analysisError) {
        await this.calls.unscheduleAnalysis(accountId, callId, lease);
        return call.analysedAt ? 'already_done' : 'given_up';
      }
      const settings = await this.settings(accountId, call.agentId);
      if (!settings.summary && settings.extraction.length === 0) {
        await this.calls.unscheduleAnalysis(accountId, callId, lease);
        return 'nothing_to_do';
      }
      const result: PostCallResult =
        turns.length === 0
          ? // Nothing was said: nothing to ask the model. Every field is known to be unknown.
            { summary: null, extracted: Object.fromEntries(settings.extraction.map((f) => [f.name, null])), model: settings.model }
          : await this.askModel(call, settings, turns);
      return (await this.calls.recordAnalysis(accountId, callId, result)) ? 'analysed' : 'already_done';
    } catch (error) {
      return this.failed(claim, error);
    }
  }

  /**
   * Asks the model, then records the tokens its answers used (also when the attempt failed) as the call's usage:
   * a line per attempt (`post-call:<n>`), priced like the conversation's model.
   */
  private async askModel(call: CallEntity, settings: PostCallSettings, turns: CallTurnEntity[]): Promise<PostCallResult> {
    const used = { inputTokens: 0, outputTokens: 0 };
    try {
      return await analysePostCall(
        this.llm,
        settings,
        turns.map((t) => ({ role: t.role, text: t.text })),
        {
          signal: anySignal([AbortSignal.timeout(POST_CALL_DEADLINE_MS), this.stopping.signal]),
          onUsage: (u) => ((used.inputTokens += u.inputTokens), (used.outputTokens += u.outputTokens)),
        },
      );
    } finally {
      if (this.usage && (used.inputTokens || used.outputTokens)) {
        await this.usage
          .record(call.accountId, call.id, `post-call:${call.analysisAttempts + 1}`, [
            { kind: 'llm_input_tokens', provider: this.llm.name, model: settings.model, quantity: used.inputTokens },
            { kind: 'llm_output_tokens', provider: this.llm.name, model: settings.model, quantity: used.outputTokens },
          ])
          .catch((error: unknown) => this.log.warn({ err: error, callId: call.id }, 'post-call usage not recorded'));
      }
    }
  }

  private async failed(claim: AnalysisClaim, error: unknown): Promise<AnalysisOutcome> {
    const { accountId, callId, lease } = claim;
    try {
      if (this.stopping.signal.aborted) {
        // Shutting down: not the call's fault. Due again now, for another replica or the next start.
        await this.calls.unscheduleAnalysis(accountId, callId, lease, this.clock());
        return 'released';
      }
      const message = error instanceof Error ? error.message : String(error);
      const { outcome, attempts } = await this.calls.rescheduleAnalysis(accountId, callId, lease, message, POST_CALL_MAX_ATTEMPTS, (n) =>
        new Date(this.clock().getTime() + POST_CALL_RETRY_DELAYS_MS[Math.min(n, POST_CALL_RETRY_DELAYS_MS.length) - 1]),
      );
      if (outcome === 'retry') this.log.warn({ err: error, callId, attempts }, 'post-call analysis failed; it will be retried');
      if (outcome === 'given_up') this.log.error({ err: error, callId, attempts }, 'post-call analysis given up');
      return outcome;
    } catch (recordError) {
      // The lease runs out and the call is taken up again.
      this.log.warn({ err: recordError, callId }, 'post-call analysis failed and could not be rescheduled');
      return 'stale';
    }
  }

  /** The agent's post-call settings: summary on unless off; its model, else POST_CALL_MODEL. A deleted agent: the defaults. */
  private async settings(accountId: string, agentId: string): Promise<PostCallSettings> {
    let block: PostCall = {};
    try {
      const { agent } = await this.agents.call('getAgent', (s, md) => s.getAgent({ account_id: accountId, id: agentId }, md));
      if (agent) block = readAgent(agent).spec.post_call ?? {};
    } catch (error) {
      if (!(error instanceof AppError && error.code === 'not_found')) throw error;
    }
    return {
      summary: block.summary !== false,
      model: (typeof block.model === 'string' && block.model) || this.config.POST_CALL_MODEL,
      extraction: (Array.isArray(block.extraction) ? block.extraction : []).flatMap((f): ExtractionField[] => {
        if (typeof f?.name !== 'string' || !f.name) return [];
        const type = FIELD_TYPES.includes(f.type as ExtractionField['type']) ? (f.type as ExtractionField['type']) : 'string';
        const options = Array.isArray(f.options) ? f.options.filter((o): o is string => typeof o === 'string') : undefined;
        return [{ name: f.name, description: typeof f.description === 'string' ? f.description : '', type, ...(type === 'enum' ? { options: options ?? [] } : {}) }];
      }),
    };
  }
}

/** Aborted as soon as one of `signals` is. */
function anySignal(signals: AbortSignal[]): AbortSignal {
  const controller = new AbortController();
  for (const signal of signals) {
    if (signal.aborted) {
      controller.abort(signal.reason);
      break;
    }
    signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true, signal: controller.signal });
  }
  return controller.signal;
}
