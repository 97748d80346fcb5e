export * from './browser-media-stream';
