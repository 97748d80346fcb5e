export * from './twilio-carrier';
export * from './testing/fake-twilio-server';
