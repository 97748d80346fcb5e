import { BeforeApplicationShutdown, Inject, Injectable, Module, OnApplicationBootstrap } from '@nestjs/common';
import { ClientsModule } from '@nestjs/microservices';
import type { Clock } from 'pg-boss';
import { DataSource } from 'typeorm';
import { AGENTS_V1, CALLS_V1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { Bus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { HealthRegistry } from '@parley/observability';
import { migrateServiceSchema, resolveDatabaseUrl, serviceDataSourceOptions } from '@parley/persistence';
import { grpcClientProvider } from '@parley/rpc';
import { BUS, CONFIG } from '@parley/runtime';
import { AGENTS_GRPC, AGENTS_PORT, GrpcAgents } from './agents-port';
import { CallOutcomes } from './call-outcomes';
import { CALLS_GRPC, CALLS_PORT, GrpcCalls } from './calls-port';
import { RunDispatcher } from './dispatcher';
import { DISPATCH_BATCH_SIZE, PgBossJobs, WORKFLOW_JOBS, WorkflowJobs } from './job-engine';
import { WORKFLOWS_MIGRATIONS } from './migrations';
import { RunEvents, WORKFLOWS_OUTBOX } from './run-events';
import { systemClock, WORKFLOW_CLOCK, WorkflowClock } from './workflow-clock';
import { WorkflowsDomain } from './workflows.domain';
import { WorkflowsEventsController } from './workflows.events-controller';
import { WorkflowsGrpcController } from './workflows.grpc-controller';
import { WORKFLOWS_DB, WorkflowsRepository } from './workflows.repository';

export const WORKFLOWS_SCHEMA = 'workflows';

/** The workflows' own pool on their own schema, migrated at start-up like a service's. */
export async function openWorkflowsDatabase(url: string): Promise<DataSource> {
  const dataSource = await new DataSource(serviceDataSourceOptions(url, { schema: WORKFLOWS_SCHEMA, entities: [OutboxRecord], migrations: WORKFLOWS_MIGRATIONS, poolSize: 10 })).initialize();
  try {
    await migrateServiceSchema(dataSource, WORKFLOWS_SCHEMA);
  } catch (error) {
    await dataSource.destroy();
    throw error;
  }
  return dataSource;
}

/**
 * Starts the workflows' background work with the host service and stops it before the pools close: the outbox
 * relay of run events, and this replica's share of the dispatch jobs.
 */
@Injectable()
export class WorkflowsRunner implements OnApplicationBootstrap, BeforeApplicationShutdown {
  constructor(
    @Inject(WORKFLOW_JOBS) private readonly jobs: WorkflowJobs,
    @Inject(WORKFLOWS_OUTBOX) private readonly relay: OutboxRelay,
    @Inject(WORKFLOWS_DB) private readonly db: DataSource,
    private readonly dispatcher: RunDispatcher,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.relay.start();
    await this.jobs.work((jobs) => this.dispatcher.dispatch(jobs));
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.jobs.stop();
    await this.relay.stop();
    if (this.db.isInitialized) await this.db.destroy();
  }
}

/**
 * Workflows, hosted by whichever service imports this module (the calls service today): gRPC WorkflowsService,
 * schema `workflows` with its own migrations, pool and outbox, the dispatch jobs on pg-boss (schema
 * `workflow_jobs`), and the consumers of the call events that decide recipients' outcomes.
 */
@Module({
  imports: [
    ClientsModule.registerAsync([
      { name: CALLS_GRPC, inject: [CONFIG], useFactory: (c: ServiceConfig) => grpcClientProvider(CALLS_GRPC, CALLS_V1, c.CALLS_GRPC_URL) },
      { name: AGENTS_GRPC, inject: [CONFIG], useFactory: (c: ServiceConfig) => grpcClientProvider(AGENTS_GRPC, AGENTS_V1, c.AGENTS_GRPC_URL) },
    ]),
  ],
  controllers: [WorkflowsGrpcController, WorkflowsEventsController],
  providers: [
    {
      provide: WORKFLOWS_DB,
      inject: [CONFIG, HealthRegistry],
      useFactory: async (c: ServiceConfig, health: HealthRegistry) => {
        const db = await openWorkflowsDatabase(await resolveDatabaseUrl(c));
        health.register('workflows-database', async () => (await db.query('SELECT 1')).length === 1);
        return db;
      },
    },
    { provide: WORKFLOW_CLOCK, useValue: systemClock },
    {
      provide: WORKFLOW_JOBS,
      inject: [CONFIG, WORKFLOW_CLOCK],
      useFactory: async (c: ServiceConfig, clock: WorkflowClock) =>
        new PgBossJobs({
          connectionString: await resolveDatabaseUrl(c),
          concurrency: c.WORKFLOW_DISPATCH_CONCURRENCY,
          batchSize: DISPATCH_BATCH_SIZE,
          // A test clock (pg-boss's TestClock) drives pg-boss's time too.
          ...(clock === systemClock ? {} : { clock: clock as Clock }),
        }),
    },
    {
      provide: WORKFLOWS_OUTBOX,
      inject: [WORKFLOWS_DB, BUS],
      useFactory: (db: DataSource, bus: Bus) => new OutboxRelay(db, bus, { service: 'workflows' }),
    },
    { provide: CALLS_PORT, useClass: GrpcCalls },
    { provide: AGENTS_PORT, useClass: GrpcAgents },
    WorkflowsRepository,
    RunEvents,
    RunDispatcher,
    CallOutcomes,
    WorkflowsDomain,
    WorkflowsRunner,
  ],
})
export class WorkflowsModule {}
