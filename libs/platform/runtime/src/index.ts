export * from './service-definition';
export * from './runtime.module';
export * from './start-service';
export * from './run-process';
export * from './node-version';
export * from './child-service';
