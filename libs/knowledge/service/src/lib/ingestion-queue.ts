import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { serviceLogger } from '@parley/observability';
import { DocumentIngestor } from './document-ingestor';
import { KnowledgeRepository } from './knowledge.repository';
import { BACKFILL_CHUNKS_PER_SWEEP, INGEST_CONCURRENCY, INGEST_SWEEP_MS, REFRESHES_PER_SWEEP, VECTOR_INDEX_FILL_PER_SWEEP } from './limits';

const log = serviceLogger('knowledge');

/** What a queued document is waiting for, each with how it runs and what is logged when it ends or throws. */
const JOBS = {
  ingest: {
    run: (ingestor: DocumentIngestor, id: string, signal: AbortSignal): Promise<string> => ingestor.run(id, signal),
    ended: 'document ingestion ended',
    threw: 'document ingestion failed; it stays processing',
  },
  refresh: {
    run: (ingestor: DocumentIngestor, id: string, signal: AbortSignal): Promise<string> => ingestor.refresh(id, signal),
    ended: 'document re-fetch ended',
    threw: 'document re-fetch failed; it is taken up again when its lease runs out',
  },
};
type Job = keyof typeof JOBS;

/**
 * Runs document ingestion in the background, at most INGEST_CONCURRENCY at once per replica. A document added on
 * this replica is queued at once; at start-up and then every minute the queue takes up documents left
 * `processing` by a replica that stopped (their lease ran out), so a restart finishes what it had begun, and URL
 * documents due for a re-fetch, which run within the same limit.
 */
@Injectable()
export class IngestionQueue implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly waiting: { id: string; job: Job }[] = [];
  private readonly queued = new Set<string>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly abort = new AbortController();
  private sweeper?: NodeJS.Timeout;
  private backfill?: Promise<unknown>;
  private stopped = false;
  /** Settles when the queue has nothing waiting or running (tests). */
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly ingestor: DocumentIngestor,
    private readonly repository: KnowledgeRepository,
    private readonly concurrency = INGEST_CONCURRENCY,
    private readonly sweepMs = INGEST_SWEEP_MS,
  ) {}

  onApplicationBootstrap(): void {
    this.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  start(): void {
    if (this.sweeper || this.stopped) return;
    void this.sweep();
    this.sweeper = setInterval(() => void this.sweep(), this.sweepMs);
    this.sweeper.unref();
  }

  /** Aborts what runs (those documents stay `processing` for a later run) and waits for it. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweeper);
    this.abort.abort();
    this.waiting.length = 0;
    this.queued.clear();
    await Promise.allSettled([...this.running.values(), this.backfill]);
  }

  enqueue(documentId: string, job: Job = 'ingest'): void {
    if (this.stopped || this.queued.has(documentId) || this.running.has(documentId)) return;
    this.queued.add(documentId);
    this.waiting.push({ id: documentId, job });
    this.pump();
  }

  /** Resolves once nothing waits or runs. */
  idle(): Promise<void> {
    if (!this.waiting.length && !this.running.size) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Takes up documents nobody holds: left `processing`, or URL documents due for a re-fetch (a few per sweep: the
   * rest wait for the next); with embeddings configured, then embeds a few chunks that have no vector yet and, where
   * the database has pgvector, keeps the model's vector index (one backfill at a time).
   */
  async sweep(): Promise<void> {
    try {
      for (const id of await this.repository.orphanedDocumentIds(100)) this.enqueue(id);
      for (const id of await this.repository.dueDocumentIds(REFRESHES_PER_SWEEP)) this.enqueue(id, 'refresh');
    } catch (error) {
      log.warn({ err: error }, 'looking for documents to ingest or re-fetch failed; trying again later');
    }
    if (this.backfill || this.stopped) return;
    this.backfill = this.ingestor
      .backfillVectors(BACKFILL_CHUNKS_PER_SWEEP, this.abort.signal)
      .then(
        (stored) => stored && log.info({ chunks: stored }, 'embedded chunks that had no vector'),
        (error: unknown) => log.warn({ err: error }, 'looking for chunks without vectors failed; trying again later'),
      )
      .then(async () => {
        if (!this.stopped) await this.ingestor.maintainVectorIndex(VECTOR_INDEX_FILL_PER_SWEEP);
      })
      .catch((error: unknown) => log.warn({ err: error }, 'building the vector index failed; trying again later'))
      .finally(() => (this.backfill = undefined));
    await this.backfill;
  }

  private pump(): void {
    while (this.running.size < this.concurrency && this.waiting.length) {
      const { id, job } = this.waiting.shift()!;
      this.queued.delete(id);
      const { run: runJob, ended, threw } = JOBS[job];
      const run = runJob(this.ingestor, id, this.abort.signal)
        .then(
          (outcome) => log.info({ documentId: id, outcome }, ended),
          (error: unknown) => log.warn({ err: error, documentId: id }, threw),
        )
        .finally(() => {
          this.running.delete(id);
          this.pump();
        });
      this.running.set(id, run);
    }
    if (!this.waiting.length && !this.running.size) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }
}
