export * from './gateway.service-definition';
