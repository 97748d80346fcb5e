export * from './llm-provider';
export * from './openai-compatible';
export * from './fake-llm';
export * from './testing/fake-openai-server';
