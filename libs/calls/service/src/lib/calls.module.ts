import { Module } from '@nestjs/common';
import { ClientsModule } from '@nestjs/microservices';
import { AGENTS_V1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { OpenAiCompatibleLlm } from '@parley/llm';
import { grpcClientProvider } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { CallAdmission } from './call-admission';
import { CallAnalytics } from './call-analytics';
import { CallAnalyticsRefresher } from './call-analytics-refresher';
import { CallAnalyticsRepository } from './call-analytics.repository';
import { CallUsage, PRICES } from './call-usage';
import { CallUsageRepository } from './call-usage.repository';
import { loadPrices } from './price-table';
import { AGENTS_GRPC, CallControl } from './call-control';
import { WebCalls } from './web-calls';
import { CallsDomain } from './calls.domain';
import { CallsGrpcController } from './calls.grpc-controller';
import { CallsRepository } from './calls.repository';
import { CallsRunner } from './calls.runner';
import { CallReaper } from './call-reaper';
import { CarrierReconciler } from './carrier-reconciler';
import { CarrierRegistry } from './carrier-registry';
import { grpcMediaWorkerDialer, MEDIA_WORKER_DIALER, MediaCommands } from './media-commands';
import { POST_CALL_DEADLINE_MS, POST_CALL_LLM, PostCallAnalysis } from './post-call-analysis';

@Module({
  imports: [
    ClientsModule.registerAsync([
      { name: AGENTS_GRPC, inject: [CONFIG], useFactory: (c: ServiceConfig) => grpcClientProvider(AGENTS_GRPC, AGENTS_V1, c.AGENTS_GRPC_URL) },
    ]),
  ],
  controllers: [CallsGrpcController],
  providers: [
    CallsRepository,
    CallsDomain,
    CallAnalyticsRepository,
    CallAnalytics,
    CallAnalyticsRefresher,
    CallUsageRepository,
    CallUsage,
    { provide: PRICES, inject: [CONFIG], useFactory: (c: ServiceConfig) => loadPrices(c.PRICES_FILE) },
    CallControl,
    WebCalls,
    CallAdmission,
    PostCallAnalysis,
    CallReaper,
    CarrierReconciler,
    CallsRunner,
    MediaCommands,
    { provide: MEDIA_WORKER_DIALER, inject: [CONFIG], useFactory: (c: ServiceConfig) => grpcMediaWorkerDialer(c.RPC_TIMEOUT_MS) },
    { provide: CarrierRegistry, inject: [CONFIG], useFactory: (c: ServiceConfig) => CarrierRegistry.fromConfig(c) },
    {
      provide: POST_CALL_LLM,
      inject: [CONFIG],
      // No retries inside one attempt: a failed attempt is rescheduled by PostCallAnalysis (with back-off).
      useFactory: (c: ServiceConfig) =>
        new OpenAiCompatibleLlm({ name: 'post-call', baseURL: c.LLM_BASE_URL, apiKey: c.LLM_API_KEY, timeoutMs: POST_CALL_DEADLINE_MS, maxRetries: 0 }),
    },
  ],
})
export class CallsModule {}
