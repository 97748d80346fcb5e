export * from './carrier-adapter';
export * from './fake-carrier';
export * from './media-stream';
