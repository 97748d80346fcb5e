export * from './knowledge.service-definition';
export { KnowledgeModule, openKnowledgeDatabase } from './lib/knowledge.module';
export { KNOWLEDGE_MIGRATIONS } from './lib/migrations';
