export * from './workflows.service-definition';
export { WorkflowsModule, openWorkflowsDatabase } from './lib/workflows.module';
export { WORKFLOWS_MIGRATIONS } from './lib/migrations';
