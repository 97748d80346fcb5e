import { Module } from '@nestjs/common';
import { WORKFLOWS_V1 } from '@parley/contracts';
import { ServiceDefinition } from '@parley/runtime';
import { WorkflowsModule } from './lib/workflows.module';

/**
 * The host service `def` (the calls service: workflows place calls and follow their events) serving workflows too:
 * the WorkflowsService contract on its gRPC server and the WorkflowsModule beside its own module. The module keeps
 * its own schema, pool and outbox, so it can become a deployable of its own.
 */
export function withWorkflows(def: ServiceDefinition): ServiceDefinition {
  if (!def.grpc) throw new Error(`${def.name} has no gRPC server to serve workflows on`);
  @Module({ imports: [def.module, WorkflowsModule] })
  class HostWithWorkflows {}
  return { ...def, module: HostWithWorkflows, grpc: { ...def.grpc, contracts: [...def.grpc.contracts, WORKFLOWS_V1] } };
}
