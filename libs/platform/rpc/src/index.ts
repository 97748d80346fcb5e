export * from './app-error';
export * from './grpc-server';
export * from './grpc-client';
export * from './page-request';
