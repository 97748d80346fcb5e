export * from './twilio-carrier';
export * from './twilio-media-stream';
export * from './testing/fake-twilio-server';
export * from './testing/fake-media-stream';
