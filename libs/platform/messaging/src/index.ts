export * from './bus';
export * from './in-process-bus';
export * from './jetstream-bus';
export * from './create-bus';
export * from './outbox';
export * from './bus-server';
export * from './ipc-peer';
export * from './ipc-bus';
