export * from './post-call';
