export { CONNECT_TIMEOUT_MS, ParleyCall, VERSION, VOLUME_INTERVAL_MS } from './lib/call';
export type { CallEndEvent, CallStartEvent, ErrorEvent, ParleyCallEvents, ParleyCallOptions, PeerEvent, TranscriptEvent, VolumeEvent } from './lib/call';
export { ParleyError } from './lib/errors';
export type { ParleyErrorCode } from './lib/errors';
export type { AudioHandlers, AudioIO, CallEnvironment, SocketLike } from './lib/environment';
export type { IceServer, PeerConnectionLike, PeerIO } from './lib/peer';
