export * from './knowledge.service-definition';
export { KnowledgeModule, openKnowledgeDatabase } from './lib/knowledge.module';
export { KnowledgeDomain } from './lib/knowledge.domain';
export { KNOWLEDGE_MIGRATIONS } from './lib/migrations';
