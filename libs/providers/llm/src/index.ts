export * from './llm-provider';
export * from './openai-compatible';
export * from './fake-llm';
export * from './embeddings-provider';
export * from './openai-compatible-embeddings';
export * from './testing/fake-openai-server';
