export * from './agents.service-definition';
