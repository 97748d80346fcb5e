export * from './grpc';
export * from './messaging';
export * from './webhook-events';
export * from './problems';
export * as agentsV1 from './gen/parley/agents/v1/agents';
export * as healthV1 from './gen/grpc/health/v1/health';
export * as webhooksV1 from './gen/parley/webhooks/v1/webhooks';
export * as callsV1 from './gen/parley/calls/v1/calls';
export * from './agents';
