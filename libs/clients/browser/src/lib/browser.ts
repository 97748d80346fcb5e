import { AudioHandlers, AudioIO, CallEnvironment, SocketLike } from './environment';
import { microphoneError, ParleyError } from './errors';
import { WORKLET_SOURCE } from './worklets';

/** The thin Web Audio layer: getUserMedia, one AudioContext, the capture and playback worklets. */
async function openBrowserAudio(handlers: AudioHandlers): Promise<AudioIO> {
  const scope = globalThis as typeof globalThis & { webkitAudioContext?: typeof AudioContext };
  const Context = scope.AudioContext ?? scope.webkitAudioContext;
  if (!Context || typeof AudioWorkletNode === 'undefined') {
    throw new ParleyError('unsupported_browser', 'This browser has no AudioWorklet: use a current Chrome, Edge, Firefox or Safari.');
  }
  const devices = scope.navigator?.mediaDevices;
  if (!devices?.getUserMedia) throw new ParleyError('microphone_unavailable', 'This browser offers no microphone to the page.');
  // Created before the first await, while the click that started the call still counts as a user gesture.
  const context = new Context({ latencyHint: 'interactive' });
  let stream: MediaStream;
  try {
    stream = await devices.getUserMedia({ audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true } });
  } catch (error) {
    void context.close().catch(() => undefined);
    throw microphoneError(error);
  }
  try {
    const url = URL.createObjectURL(new Blob([WORKLET_SOURCE], { type: 'application/javascript' }));
    try {
      await context.audioWorklet.addModule(url);
    } finally {
      URL.revokeObjectURL(url);
    }
    // Not awaited: a page without a user gesture resolves it only once the person interacts.
    void context.resume();
    const capture = new AudioWorkletNode(context, 'parley-capture', { numberOfOutputs: 1, outputChannelCount: [1] });
    capture.port.onmessage = (event: MessageEvent<Float32Array>) => handlers.capture(event.data);
    // Its output is silence; connected so the graph keeps pulling it.
    context.createMediaStreamSource(stream).connect(capture).connect(context.destination);
    const playback = new AudioWorkletNode(context, 'parley-playback', { numberOfInputs: 0, numberOfOutputs: 1, outputChannelCount: [1] });
    playback.port.onmessage = (event: MessageEvent<number>) => handlers.consumed(event.data);
    playback.connect(context.destination);
    const tracks = stream.getTracks();
    return {
      sampleRate: context.sampleRate,
      play: (samples) => playback.port.postMessage({ type: 'play', samples }, [samples.buffer]),
      clear: () => playback.port.postMessage({ type: 'clear' }),
      close: () => {
        for (const track of tracks) track.stop();
        capture.port.onmessage = playback.port.onmessage = null;
        void context.close().catch(() => undefined);
      },
    };
  } catch (error) {
    for (const track of stream.getTracks()) track.stop();
    void context.close().catch(() => undefined);
    throw error;
  }
}

export const browserEnvironment: CallEnvironment = {
  get secureContext() {
    return (globalThis as { isSecureContext?: boolean }).isSecureContext !== false;
  },
  createSocket(url) {
    if (typeof WebSocket === 'undefined') throw new ParleyError('unsupported_browser', 'This browser has no WebSocket.');
    // The browser's WebSocket is a SocketLike; its handlers' DOM event types are only narrower.
    return new WebSocket(url) as unknown as SocketLike;
  },
  openAudio: openBrowserAudio,
};
