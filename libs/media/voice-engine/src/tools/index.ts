export * from './arguments';
export * from './calendar';
export * from './custom-function';
export * from './http';
export * from './registered-function';
export * from './registry';
export * from './transfer';
export * from './types';
