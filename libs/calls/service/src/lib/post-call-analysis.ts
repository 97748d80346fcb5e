import { Controller, Inject, Injectable } from '@nestjs/common';
import { ClientGrpc, EventPattern, Payload } from '@nestjs/microservices';
import { AGENTS_V1, agentsV1, CallEnded, SUBJECTS } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { LlmProvider } from '@parley/llm';
import { serviceLogger } from '@parley/observability';
import { analysePostCall, ExtractionField, PostCallResult, PostCallSettings } from '@parley/post-call';
import { AppError, RpcClient } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { AGENTS_GRPC } from './call-control';
import { CallsDomain } from './calls.domain';

export const POST_CALL_LLM = Symbol('POST_CALL_LLM');

/** Attempts of one call's analysis (the first delivery and redeliveries) before it is given up. */
export const POST_CALL_MAX_ATTEMPTS = 5;
/**
 * Deadline of one attempt, both model requests included (a reply that is not JSON is asked for once more). Below
 * the bus's 30 s acknowledgement wait, so a slow model does not get the event redelivered while it still runs.
 */
export const POST_CALL_DEADLINE_MS = 25_000;

const FIELD_TYPES: readonly ExtractionField['type'][] = ['string', 'number', 'boolean', 'enum'];

/** An agent's `post_call` block as stored in its spec (every member optional). */
interface PostCallBlock {
  summary?: boolean;
  model?: string;
  extraction?: { name?: unknown; description?: unknown; type?: unknown; options?: unknown }[];
}

export type AnalysisOutcome = 'analysed' | 'already_done' | 'nothing_to_do' | 'gone' | 'given_up';

/**
 * The post-call pass of the calls service: for a call that ended (domain event `parley.domain.calls.call.ended`),
 * reads the agent's `post_call` settings from the agents service and the transcript from its own tables, asks the
 * model for the summary and the typed extraction fields, and writes them onto the call together with
 * `call.analysed` (one transaction, through the outbox). Idempotent: an analysed or given-up call is left alone.
 * A failure throws, so the bus redelivers the event; the POST_CALL_MAX_ATTEMPTS-th failure is recorded on the call
 * (`analysis_error`) and acknowledged. The call's status is never touched.
 */
@Injectable()
export class PostCallAnalysis {
  private readonly agents: RpcClient<agentsV1.AgentsServiceClient>;
  private readonly log = serviceLogger('calls');

  constructor(
    private readonly calls: CallsDomain,
    @Inject(POST_CALL_LLM) private readonly llm: LlmProvider,
    @Inject(AGENTS_GRPC) grpc: ClientGrpc,
    @Inject(CONFIG) private readonly config: ServiceConfig,
  ) {
    this.agents = new RpcClient(grpc, AGENTS_V1, 'agents', config.RPC_TIMEOUT_MS);
  }

  async onCallEnded(event: CallEnded): Promise<AnalysisOutcome> {
    const { account_id: accountId, call_id: callId } = event;
    const { call, turns } = await this.calls.transcript(accountId, callId).catch((error: unknown) => {
      if (error instanceof AppError && error.code === 'not_found') return { call: undefined, turns: [] };
      throw error;
    });
    if (!call) return 'gone';
    if (call.analysedAt) return 'already_done';
    if (call.analysisError) return 'given_up';

    let result: PostCallResult;
    try {
      const settings = await this.settings(accountId, call.agentId);
      if (!settings.summary && settings.extraction.length === 0) return 'nothing_to_do';
      result =
        turns.length === 0
          ? // Nothing was said: nothing to ask the model. Every field is known to be unknown.
            { summary: null, extracted: Object.fromEntries(settings.extraction.map((f) => [f.name, null])), model: settings.model }
          : await analysePostCall(
              this.llm,
              settings,
              turns.map((t) => ({ role: t.role, text: t.text })),
              { signal: AbortSignal.timeout(POST_CALL_DEADLINE_MS) },
            );
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const done = await this.calls.recordAnalysisFailure(accountId, callId, message, POST_CALL_MAX_ATTEMPTS);
      if (!done) {
        this.log.warn({ err: error, callId }, 'post-call analysis failed; the event will be redelivered');
        throw error;
      }
      this.log.error({ err: error, callId, attempts: POST_CALL_MAX_ATTEMPTS }, 'post-call analysis given up');
      return 'given_up';
    }
    return (await this.calls.recordAnalysis(accountId, callId, result)) ? 'analysed' : 'already_done';
  }

  /** The agent's post-call settings: summary on unless off; its model, else POST_CALL_MODEL. A deleted agent: the defaults. */
  private async settings(accountId: string, agentId: string): Promise<PostCallSettings> {
    let block: PostCallBlock = {};
    try {
      const { agent } = await this.agents.call('getAgent', (s, md) => s.getAgent({ account_id: accountId, id: agentId }, md));
      if (agent) block = ((JSON.parse(agent.spec_json || '{}') as { post_call?: PostCallBlock }).post_call ?? {}) as PostCallBlock;
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

/** The calls service's durable consumer of its own `call.ended` domain event (consumer `calls.<subject>`). */
@Controller()
export class PostCallConsumer {
  constructor(private readonly analysis: PostCallAnalysis) {}

  @EventPattern(SUBJECTS.callEnded.name)
  async onCallEnded(@Payload() event: CallEnded): Promise<void> {
    await this.analysis.onCallEnded(event);
  }
}
