export * from './load-config';
export * from './platform-config';
export * from './bootstrap-keys';
export * from './secret-key';
export * from './dev-carrier';
export * from './tracing-config';
