export * from './carrier-adapter';
export * from './fake-carrier';
