export * from './database';
export * from './ports';
export * from './platform';
export * from './api-client';
export * from './event-stream';
export * from './nats-server';
export * from './postgres-server';
export * from './raw-http';
