import { Inject, Module, OnModuleInit } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { ClientsModule } from '@nestjs/microservices';
import { DataSource } from 'typeorm';
import { AGENTS_V1, CALLS_V1, KNOWLEDGE_V1, WEBHOOKS_V1, WORKFLOWS_V1 } from '@parley/contracts';
import { GatewayConfig, parseBootstrapKeys, resolveSecretKey } from '@parley/config';
import { grpcClientProvider } from '@parley/rpc';
import { createBlobStore } from '@parley/storage';
import { CONFIG } from '@parley/runtime';
import { AgentsClient, AGENTS_GRPC } from './agents/agents.client';
import { AgentsController } from './agents/agents.controller';
import { AnalyticsController } from './analytics/analytics.controller';
import { CsatController } from './analytics/csat.controller';
import { CallsClient, CALLS_GRPC } from './calls/calls.client';
import { CallsController } from './calls/calls.controller';
import { RecordingLinksController } from './calls/recording-links.controller';
import { RealtimeTokensController } from './calls/realtime-tokens.controller';
import { RendezvousController } from './calls/rendezvous.controller';
import { RingingController } from './calls/ringing.controller';
import { BLOB_STORE, Recordings } from './calls/recordings';
import { CarrierWebhooksController } from './carriers/carrier-webhooks.controller';
import { DevPhoneModule } from './dev-phone/dev-phone.module';
import { OperatorConsoleModule } from './operator-console/operator-console.module';
import { AgentGroupsController } from './agents/agent-groups.controller';
import { FunctionsController } from './agents/functions.controller';
import { ApiKeysRepository } from './auth/api-keys.repository';
import { AuthGuard } from './auth/auth.guard';
import { ProjectScopeGuard } from './auth/project-scope.guard';
import { CursorCodec } from './http/pagination';
import { ProblemFilter } from './http/problem';
import { BodyValidationPipe } from './http/validation';
import { OpsController } from './ops/ops.controller';
import { DocsController } from './ops/docs.controller';
import { ApiKeysController } from './auth/api-keys.controller';
import { IdempotencyStore } from './edge/idempotency.store';
import { loadEmbedBuild } from './embed/embed-build';
import { EMBED_BUILD, EmbedController } from './embed/embed.controller';
import { MemoryRateLimitStore, PostgresRateLimitStore, RATE_LIMIT_STORE, RateLimiter, RateLimitStore } from './edge/rate-limit';
import { InputHygieneGuard } from './http/input-hygiene.guard';
import { NoBodyGuard } from './http/no-body';
import { QueryGuard } from './http/query.guard';
import { KnowledgeBasesController } from './knowledge/knowledge-bases.controller';
import { KnowledgeClient, KNOWLEDGE_GRPC } from './knowledge/knowledge.client';
import { ProjectsController } from './projects/projects.controller';
import { ProjectsRepository } from './projects/projects.repository';
import { ProjectsService } from './projects/projects.service';
import { WebhookEndpointsController } from './webhooks/webhook-endpoints.controller';
import { WebhooksClient, WEBHOOKS_GRPC } from './webhooks/webhooks.client';
import { WorkflowsController } from './workflows/workflows.controller';
import { WorkflowsClient, WORKFLOWS_GRPC } from './workflows/workflows.client';

@Module({
  imports: [
    ClientsModule.registerAsync([
      {
        name: AGENTS_GRPC,
        inject: [CONFIG],
        useFactory: (config: GatewayConfig) => grpcClientProvider(AGENTS_GRPC, AGENTS_V1, config.AGENTS_GRPC_URL),
      },
      {
        name: CALLS_GRPC,
        inject: [CONFIG],
        useFactory: (config: GatewayConfig) => grpcClientProvider(CALLS_GRPC, CALLS_V1, config.CALLS_GRPC_URL),
      },
      {
        // Knowledge bases are served by the agents deployable.
        name: KNOWLEDGE_GRPC,
        inject: [CONFIG],
        useFactory: (config: GatewayConfig) => grpcClientProvider(KNOWLEDGE_GRPC, KNOWLEDGE_V1, config.AGENTS_GRPC_URL),
      },
      {
        // Workflows are served by the calls deployable.
        name: WORKFLOWS_GRPC,
        inject: [CONFIG],
        useFactory: (config: GatewayConfig) => grpcClientProvider(WORKFLOWS_GRPC, WORKFLOWS_V1, config.CALLS_GRPC_URL),
      },
      {
        name: WEBHOOKS_GRPC,
        inject: [CONFIG],
        useFactory: (config: GatewayConfig) => grpcClientProvider(WEBHOOKS_GRPC, WEBHOOKS_V1, config.WEBHOOKS_GRPC_URL),
      },
    ]),
    DevPhoneModule,
    OperatorConsoleModule,
  ],
  controllers: [
    OpsController,
    AgentsController,
    CallsController,
    RecordingLinksController,
    RealtimeTokensController,
    RendezvousController,
    RingingController,
    CarrierWebhooksController,
    AgentGroupsController,
    FunctionsController,
    WebhookEndpointsController,
    KnowledgeBasesController,
    WorkflowsController,
    CsatController,
    AnalyticsController,
    ApiKeysController,
    DocsController,
    EmbedController,
    ProjectsController,
  ],
  providers: [
    ApiKeysRepository,
    ProjectsRepository,
    ProjectsService,
    AgentsClient,
    CallsClient,
    WebhooksClient,
    KnowledgeClient,
    WorkflowsClient,
    IdempotencyStore,
    Recordings,
    { provide: EMBED_BUILD, useFactory: loadEmbedBuild },
    { provide: BLOB_STORE, inject: [CONFIG], useFactory: (c: GatewayConfig) => createBlobStore(c) },
    { provide: CursorCodec, inject: [CONFIG], useFactory: (c: GatewayConfig) => new CursorCodec(resolveSecretKey(c)) },
    {
      provide: RATE_LIMIT_STORE,
      inject: [CONFIG, DataSource],
      // One process (no NATS) has one gateway: count in memory, exactly; replicas share counters in PostgreSQL.
      useFactory: (c: GatewayConfig, ds: DataSource) =>
        c.RATE_LIMIT_STORE === 'memory' || (c.RATE_LIMIT_STORE === 'auto' && !c.NATS_URL)
          ? new MemoryRateLimitStore()
          : new PostgresRateLimitStore(ds),
    },
    // Counted on every request before any guard (http/common-headers), so also on failed authentication.
    {
      provide: RateLimiter,
      inject: [CONFIG, RATE_LIMIT_STORE],
      useFactory: (c: GatewayConfig, store: RateLimitStore) => new RateLimiter(c.RATE_LIMIT_REQUESTS, c.RATE_LIMIT_WINDOW_SECONDS, store),
    },
    // Guards run in this order: authentication + permission, a scoped key's project, input hygiene, query, no body
    // where none is taken.
    { provide: APP_GUARD, useClass: AuthGuard },
    { provide: APP_GUARD, useClass: ProjectScopeGuard },
    { provide: APP_GUARD, useClass: InputHygieneGuard },
    { provide: APP_GUARD, useClass: QueryGuard },
    { provide: APP_GUARD, useClass: NoBodyGuard },
    { provide: APP_FILTER, useClass: ProblemFilter },
    { provide: APP_PIPE, useClass: BodyValidationPipe },
  ],
})
export class GatewayModule implements OnModuleInit {
  constructor(
    @Inject(CONFIG) private readonly config: GatewayConfig,
    private readonly keys: ApiKeysRepository,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.keys.ensureBootstrapKeys(parseBootstrapKeys(this.config.BOOTSTRAP_KEYS).keys);
  }
}
