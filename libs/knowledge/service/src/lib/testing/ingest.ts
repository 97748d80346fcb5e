import { chunkDocument, extractDocument, IngestError } from '@parley/knowledge-ingest';
import { IngestFunctions } from '../ingest-port';
import { KnowledgeLimits } from '../limits';

/* What the embeddings tests (rerank, pgvector) share. Not exported by the library: tests import it by path. */

export const TEST_LIMITS: KnowledgeLimits = { maxDocumentBytes: 1024 * 1024, maxDocumentCharacters: 100_000, maxBaseChunks: 1000, maxBasesPerAccount: 5 };

/** The ingest library, with each section of a short document a chunk of its own, and no network. */
export const SECTION_INGEST: IngestFunctions = {
  extractDocument,
  chunkDocument: (d) => chunkDocument(d, { maxChars: 150, overlapChars: 0 }),
  fetchDocument: async () => {
    throw new IngestError('fetch_failed', 'no network in this test');
  },
};
