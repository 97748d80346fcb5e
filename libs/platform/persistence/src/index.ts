export * from './database-url';
export * from './service-database';
export * from './ids';
export * from './keyset';
export * from './sealing';
export * from './signed-tokens';
export * from './group-commit';
export * from './database-unavailable';
