export * from './dev-wire';
export * from './dev-carrier';
export * from './dev-switch';
export * from './testing/dev-phone-client';
