import { join } from 'node:path';

/**
 * Where the .proto files live at run time. Builds copy `proto/` beside the compiled tree so the same relative
 * path works from sources (tests) and from `dist/apps/<app>`.
 */
export const PROTO_ROOT = join(__dirname, '..', '..', '..', 'proto');

export interface GrpcContract {
  /** Fully-qualified proto package, versioned. */
  readonly package: string;
  /** Service name inside the package. */
  readonly service: string;
  /** Proto file, relative to PROTO_ROOT. */
  readonly protoFile: string;
}

export const AGENTS_V1: GrpcContract = {
  package: 'parley.agents.v1',
  service: 'AgentsService',
  protoFile: 'parley/agents/v1/agents.proto',
};

/** Metadata key carrying the public request id across every gRPC hop. */
export const REQUEST_ID_METADATA = 'x-request-id';

/** The standard grpc.health.v1 protocol; every service serves it. */
export const HEALTH_V1: GrpcContract = {
  package: 'grpc.health.v1',
  service: 'Health',
  protoFile: 'grpc/health/v1/health.proto',
};

export const WEBHOOKS_V1: GrpcContract = {
  package: 'parley.webhooks.v1',
  service: 'WebhooksService',
  protoFile: 'parley/webhooks/v1/webhooks.proto',
};

export const CALLS_V1: GrpcContract = {
  package: 'parley.calls.v1',
  service: 'CallsService',
  protoFile: 'parley/calls/v1/calls.proto',
};

/** Commands to the media worker carrying a call (served by every media worker, addressed per call). */
export const MEDIA_V1: GrpcContract = {
  package: 'parley.media.v1',
  service: 'MediaWorkerService',
  protoFile: 'parley/media/v1/media.proto',
};

/** Workflows (outbound campaigns) and their runs (served by the calls deployable; behaviour in libs/workflows/service). */
export const WORKFLOWS_V1: GrpcContract = {
  package: 'parley.workflows.v1',
  service: 'WorkflowsService',
  protoFile: 'parley/workflows/v1/workflows.proto',
};

/** Knowledge bases, documents and search (served by the agents deployable; behaviour in libs/knowledge/service). */
export const KNOWLEDGE_V1: GrpcContract = {
  package: 'parley.knowledge.v1',
  service: 'KnowledgeService',
  protoFile: 'parley/knowledge/v1/knowledge.proto',
};
