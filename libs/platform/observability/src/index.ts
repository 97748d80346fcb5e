export * from './request-context';
export * from './logger';
export * from './metrics';
export * from './health';
export * from './ops-server';
