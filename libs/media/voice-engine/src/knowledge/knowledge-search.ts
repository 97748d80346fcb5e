/** One passage of a knowledge base that a search found. */
export interface KnowledgeHit {
  documentId: string;
  knowledgeBaseId: string;
  title: string;
  /** The headings above the passage, joined with ' > '. */
  heading: string;
  text: string;
  /** 0-1, higher is better. */
  score: number;
}

export interface KnowledgeQuery {
  /** The bases to search (the account's; one it does not own is skipped). */
  baseIds: string[];
  query: string;
  limit: number;
  signal: AbortSignal;
}

/** Searches knowledge bases: the agents service's Search in the media worker, FakeKnowledgeSearch in tests. */
export interface KnowledgeSearch {
  search(query: KnowledgeQuery): Promise<KnowledgeHit[]>;
}
