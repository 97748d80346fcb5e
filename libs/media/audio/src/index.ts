export * from './call-recorder';
export * from './codecs';
export * from './resample';
export * from './wav';
export * from './tones';
export * from './levels';
