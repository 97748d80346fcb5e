import type { Clock } from '../clock';
import type { KnowledgeHit, KnowledgeQuery, KnowledgeSearch } from './knowledge-search';

/**
 * KnowledgeSearch for tests: passages in memory, found when they share a word (4+ letters) with the query, best
 * overlap first; answers after `delayMs` on the given clock (the engine's), and honours the abort signal.
 */
export class FakeKnowledgeSearch implements KnowledgeSearch {
  readonly queries: KnowledgeQuery[] = [];
  delayMs = 0;
  failWith: Error | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly passages: (Omit<KnowledgeHit, 'score' | 'heading'> & { heading?: string })[],
  ) {}

  search(query: KnowledgeQuery): Promise<KnowledgeHit[]> {
    this.queries.push(query);
    return new Promise((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        query.signal.removeEventListener('abort', abort);
        if (this.failWith) return reject(this.failWith);
        resolve(this.find(query));
      }, this.delayMs);
      const abort = () => {
        this.clock.clearTimeout(timer);
        reject(new Error('aborted'));
      };
      query.signal.addEventListener('abort', abort, { once: true });
    });
  }

  private find(query: KnowledgeQuery): KnowledgeHit[] {
    const words = new Set(query.query.toLowerCase().match(/[\p{L}\p{N}]{4,}/gu) ?? []);
    return this.passages
      .filter((p) => query.baseIds.includes(p.knowledgeBaseId))
      .map((p) => {
        const text = `${p.title} ${p.heading ?? ''} ${p.text}`.toLowerCase();
        const shared = [...words].filter((w) => text.includes(w)).length;
        return { ...p, heading: p.heading ?? '', score: words.size ? shared / words.size : 0 };
      })
      .filter((hit) => hit.score > 0)
      .sort((a, b) => b.score - a.score)
      .slice(0, query.limit);
  }
}
