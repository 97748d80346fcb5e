import { Inject, Module, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import { DataSource, DataSourceOptions } from 'typeorm';
import { ServiceConfig } from '@parley/config';
import { parseEgressAllowlist } from '@parley/egress';
import { chunkDocument, extractDocument, fetchDocument } from '@parley/knowledge-ingest';
import { HealthRegistry, serviceLogger } from '@parley/observability';
import { migrateServiceSchema, resolveDatabaseUrl, serviceDataSourceOptions } from '@parley/persistence';
import { CONFIG } from '@parley/runtime';
import { DocumentIngestor, INGEST_EGRESS } from './document-ingestor';
import { KNOWLEDGE_EMBEDDINGS, KnowledgeEmbeddings, knowledgeEmbeddings } from './embeddings';
import { INGEST_FUNCTIONS, IngestFunctions } from './ingest-port';
import { IngestionQueue } from './ingestion-queue';
import { KnowledgeDomain } from './knowledge.domain';
import { KnowledgeGrpcController } from './knowledge.grpc-controller';
import { FUZZY_MIN_SIMILARITY, KNOWLEDGE_DB, KnowledgeRepository } from './knowledge.repository';
import { KNOWLEDGE_LIMITS, knowledgeLimits } from './limits';
import { KNOWLEDGE_MIGRATIONS } from './migrations';

export const KNOWLEDGE_SCHEMA = 'knowledge';

const log = serviceLogger('knowledge');

/**
 * The knowledge library's own connection pool, on its own schema (migrated at start-up like a service's). Its
 * sessions take pg_trgm's similarity threshold (`%`) from FUZZY_MIN_SIMILARITY, which finds the vocabulary words a
 * misspelt query word stands for (the extension's default, 0.3, suggests too many).
 */
export async function openKnowledgeDatabase(url: string): Promise<DataSource> {
  const base = serviceDataSourceOptions(url, { schema: KNOWLEDGE_SCHEMA, entities: [], migrations: KNOWLEDGE_MIGRATIONS, poolSize: 5 });
  const dataSource = await new DataSource({
    ...base,
    extra: { options: `-c search_path=${KNOWLEDGE_SCHEMA} -c pg_trgm.similarity_threshold=${FUZZY_MIN_SIMILARITY}` },
  } as DataSourceOptions).initialize();
  try {
    await migrateServiceSchema(dataSource, KNOWLEDGE_SCHEMA);
  } catch (error) {
    await dataSource.destroy();
    throw error;
  }
  return dataSource;
}

const INGEST: IngestFunctions = { extractDocument, chunkDocument, fetchDocument };

/**
 * Knowledge bases, hosted by whichever service imports this module (the agents service today): gRPC
 * KnowledgeService, schema `knowledge` with its own migrations and pool, the background ingestion queue.
 */
@Module({
  controllers: [KnowledgeGrpcController],
  providers: [
    {
      provide: KNOWLEDGE_DB,
      inject: [CONFIG, HealthRegistry],
      useFactory: async (c: ServiceConfig, health: HealthRegistry) => {
        const db = await openKnowledgeDatabase(await resolveDatabaseUrl(c));
        health.register('knowledge-database', async () => (await db.query('SELECT 1')).length === 1);
        return db;
      },
    },
    { provide: KNOWLEDGE_LIMITS, inject: [CONFIG], useFactory: knowledgeLimits },
    { provide: INGEST_FUNCTIONS, useValue: INGEST },
    { provide: KNOWLEDGE_EMBEDDINGS, inject: [CONFIG], useFactory: knowledgeEmbeddings },
    { provide: INGEST_EGRESS, inject: [CONFIG], useFactory: (c: ServiceConfig) => parseEgressAllowlist(c.EGRESS_ALLOWLIST).policy },
    KnowledgeRepository,
    DocumentIngestor,
    { provide: IngestionQueue, inject: [DocumentIngestor, KnowledgeRepository], useFactory: (i: DocumentIngestor, r: KnowledgeRepository) => new IngestionQueue(i, r) },
    KnowledgeDomain,
  ],
  exports: [KnowledgeDomain],
})
export class KnowledgeModule implements OnModuleInit, OnApplicationShutdown {
  constructor(
    private readonly queue: IngestionQueue,
    @Inject(KNOWLEDGE_DB) private readonly db: DataSource,
    private readonly repository: KnowledgeRepository,
    @Optional() @Inject(KNOWLEDGE_EMBEDDINGS) private readonly embeddings: KnowledgeEmbeddings | null = null,
  ) {}

  /** With embeddings configured, pgvector's candidates where the database has it (docs/knowledge.md, Vector candidates). */
  async onModuleInit(): Promise<void> {
    if (!this.embeddings) return;
    const outcome = await this.repository.enableVectorIndex().catch((error: Error) => ({ reason: error.message }));
    if ('version' in outcome) log.info({ pgvector: outcome.version }, 'knowledge search adds the nearest chunks by pgvector to the lexical candidates');
    else log.info({ reason: outcome.reason }, 'knowledge search reranks lexical candidates only (no pgvector)');
  }

  /** Ingestion first (what runs is aborted and stays `processing`), then the pool it used. */
  async onApplicationShutdown(): Promise<void> {
    await this.queue.stop();
    if (this.db.isInitialized) await this.db.destroy();
  }
}
