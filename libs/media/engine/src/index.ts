export * from './agent-settings';
export * from './call-engine';
export * from './clock';
export * from './metrics';
export * from './playout';
export * from './sentences';
export * from './vad';
export * from './tools';
