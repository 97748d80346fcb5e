import { StreamSocket } from '../call-session';

/** A session's socket for tests: every frame is passed to `send` at once, as written (no pacing). */
export function directSocket(send: (frame: string) => void, close: (code: number, reason: string) => void = () => undefined): StreamSocket {
  return {
    audio: (frame) => (send(frame), performance.now()),
    mark: send,
    text: send,
    clear: (frame) => (send(frame), performance.now()),
    close,
  };
}
