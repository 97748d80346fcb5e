import { Module } from '@nestjs/common';
import { KNOWLEDGE_V1 } from '@parley/contracts';
import { ServiceDefinition } from '@parley/runtime';
import { KnowledgeModule } from './lib/knowledge.module';

/** Room for a base64 document at the configured limit in one gRPC request (its bytes plus the fields around them). */
const GRPC_OVERHEAD_BYTES = 1024 * 1024;

/**
 * The host service `def` (the agents service) serving knowledge bases too: the KnowledgeService contract on its
 * gRPC server (which then accepts a document of KNOWLEDGE_MAX_DOCUMENT_BYTES) and the KnowledgeModule beside its
 * own module. The module keeps its own schema and pool, so it can become a deployable of its own.
 */
export function withKnowledge(def: ServiceDefinition): ServiceDefinition {
  if (!def.grpc) throw new Error(`${def.name} has no gRPC server to serve knowledge bases on`);
  @Module({ imports: [def.module, KnowledgeModule] })
  class HostWithKnowledge {}
  const grpc = def.grpc;
  return {
    ...def,
    module: HostWithKnowledge,
    grpc: {
      ...grpc,
      contracts: [...grpc.contracts, KNOWLEDGE_V1],
      maxReceiveMessageBytes: (c) => Math.max(grpc.maxReceiveMessageBytes?.(c) ?? 0, c.KNOWLEDGE_MAX_DOCUMENT_BYTES + GRPC_OVERHEAD_BYTES),
    },
  };
}
