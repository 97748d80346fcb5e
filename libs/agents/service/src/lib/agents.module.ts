import { Module } from '@nestjs/common';
import { resolveSecretKey, ServiceConfig } from '@parley/config';
import { OpenAiCompatibleLlm } from '@parley/llm';
import { parseEgressAllowlist, parseHttpHosts } from '@parley/egress';
import type { RegisteredFunction } from '@parley/contracts';
import { CONFIG } from '@parley/runtime';
import { KnowledgeDomain, KnowledgeModule } from '@parley/knowledge-service';
import { AgentsDomain, CATALOGUE, FUNCTIONS, KNOWLEDGE_BASES, POST_CALL_LLM } from './agents.domain';
import { AgentsGrpcController } from './agents.grpc-controller';
import { AgentsRepository } from './agents.repository';
import { loadFunctions } from './functions.catalogue';
import { GroupsRepository } from './groups.repository';
import { Sealer } from '@parley/persistence';
import { DeploymentCatalogue } from './spec/validate-agent';

const list = (value: string) => value.split(',').map((s) => s.trim()).filter(Boolean);

/**
 * The agents service. It imports the knowledge library's module (the same deployable hosts knowledge bases, see
 * withKnowledge) to check the bases an agent names through that library's domain, never its tables.
 */
@Module({
  imports: [KnowledgeModule],
  controllers: [AgentsGrpcController],
  providers: [
    { provide: KNOWLEDGE_BASES, useExisting: KnowledgeDomain },
    AgentsRepository,
    GroupsRepository,
    AgentsDomain,
    { provide: Sealer, inject: [CONFIG], useFactory: (c: ServiceConfig) => new Sealer(resolveSecretKey(c)) },
    { provide: FUNCTIONS, inject: [CONFIG], useFactory: (c: ServiceConfig) => loadFunctions(c.FUNCTIONS_FILE) },
    {
      provide: CATALOGUE,
      inject: [CONFIG, FUNCTIONS],
      useFactory: (c: ServiceConfig, functions: RegisteredFunction[]): DeploymentCatalogue => ({
        sttProviders: new Set(list(c.STT_PROVIDERS)),
        ttsProviders: new Set(list(c.TTS_PROVIDERS)),
        functions: new Set(functions.map((f) => f.name)),
        urls: {
          internalHosts: list(c.INTERNAL_HOSTS),
          webhookHttpHosts: parseHttpHosts(c.WEBHOOK_ALLOW_HTTP_HOSTS),
          egress: parseEgressAllowlist(c.EGRESS_ALLOWLIST).policy,
        },
      }),
    },
    {
      provide: POST_CALL_LLM,
      inject: [CONFIG],
      useFactory: (c: ServiceConfig) => new OpenAiCompatibleLlm({ name: 'post-call', baseURL: c.LLM_BASE_URL, apiKey: c.LLM_API_KEY, timeoutMs: 30_000 }),
    },
  ],
})
export class AgentsModule {}
