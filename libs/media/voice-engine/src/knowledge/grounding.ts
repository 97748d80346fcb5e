import type { Clock } from '../clock';
import { engineMetrics } from '../metrics';
import type { KnowledgeHit, KnowledgeSearch } from './knowledge-search';

/** What a lookup gave: the passages (none on a miss) and why. */
export interface Lookup {
  hits: KnowledgeHit[];
  outcome: 'hit' | 'empty' | 'timeout' | 'error' | 'aborted';
}

export interface GroundingOptions {
  search: KnowledgeSearch;
  clock: Clock;
  /** The turn's budget (capabilities.retrieval_timeout_ms, else the deployment's): past it the turn answers without. */
  timeoutMs: number;
  /** Passages per lookup. */
  limit?: number;
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

/** Passages given to the model per turn: enough to answer, few enough to keep the prompt (and its latency) small. */
const PASSAGES = 4;

/**
 * Knowledge lookups within a turn: a search bounded by the turn's budget on the engine's clock (on timeout the
 * search is aborted and the turn goes on without grounding, counted), and the passages as the model reads them.
 */
export class KnowledgeGrounding {
  constructor(private readonly options: GroundingOptions) {}

  /** Searches `baseIds` for `query`; never rejects, never takes longer than `budgetMs` (default the turn's budget). */
  lookup(query: string, baseIds: string[], signal: AbortSignal, budgetMs = this.options.timeoutMs): Promise<Lookup> {
    const { clock, search } = this.options;
    const started = clock.now();
    const controller = new AbortController();
    const forward = () => controller.abort();
    signal.addEventListener('abort', forward, { once: true });
    return new Promise<Lookup>((resolve) => {
      let settled = false;
      const settle = (lookup: Lookup) => {
        if (settled) return;
        settled = true;
        clock.clearTimeout(timer);
        signal.removeEventListener('abort', forward);
        engineMetrics.knowledgeLookups.inc({ outcome: lookup.outcome });
        if (lookup.outcome !== 'aborted') engineMetrics.stageLatency.observe({ stage: 'knowledge' }, (clock.now() - started) / 1000);
        resolve(lookup);
      };
      const timer = clock.setTimeout(() => {
        controller.abort();
        this.options.log?.('knowledge lookup over budget; the turn answers without it', { budget_ms: budgetMs });
        settle({ hits: [], outcome: 'timeout' });
      }, budgetMs);
      if (signal.aborted) return settle({ hits: [], outcome: 'aborted' });
      search
        .search({ baseIds, query, limit: this.options.limit ?? PASSAGES, signal: controller.signal })
        .then((hits) => settle({ hits, outcome: hits.length ? 'hit' : 'empty' }))
        .catch((error: unknown) => {
          if (signal.aborted) return settle({ hits: [], outcome: 'aborted' });
          if (!controller.signal.aborted) this.options.log?.('knowledge lookup failed; the turn answers without it', { err: String(error) });
          settle({ hits: [], outcome: 'error' });
        });
    });
  }
}

/** The passages as the model reads them: numbered, with where each comes from. */
export function groundingText(hits: KnowledgeHit[]): string {
  const passages = hits.map((h, i) => `[${i + 1}] ${h.title}${h.heading ? ` — ${h.heading}` : ''}\n${h.text}`);
  return [
    'Passages from the knowledge base that may answer the caller. Answer from them when they do; do not invent facts they do not give; if they do not cover the question, say you are not sure.',
    ...passages,
  ].join('\n\n');
}
