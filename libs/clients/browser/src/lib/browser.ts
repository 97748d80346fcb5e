import { AudioHandlers, AudioIO, CallEnvironment, SocketLike } from './environment';
import { microphoneError, ParleyError } from './errors';
import { IceServer, PeerConnectionLike, PeerIO } from './peer';
import { WORKLET_SOURCE } from './worklets';

const scope = globalThis as typeof globalThis & { webkitAudioContext?: typeof AudioContext };

/**
 * The microphone (echo cancellation, noise suppression, gain control) and an AudioContext created before the first
 * await, while the click that started the call still counts as a user gesture.
 */
async function openMicrophone(): Promise<{ context: AudioContext; stream: MediaStream }> {
  const Context = scope.AudioContext ?? scope.webkitAudioContext;
  if (!Context || typeof AudioWorkletNode === 'undefined') {
    throw new ParleyError('unsupported_browser', 'This browser has no AudioWorklet: use a current Chrome, Edge, Firefox or Safari.');
  }
  const devices = scope.navigator?.mediaDevices;
  if (!devices?.getUserMedia) throw new ParleyError('microphone_unavailable', 'This browser offers no microphone to the page.');
  const context = new Context({ latencyHint: 'interactive' });
  try {
    return { context, stream: await devices.getUserMedia({ audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true } }) };
  } catch (error) {
    void context.close().catch(() => undefined);
    throw microphoneError(error);
  }
}

/** Loads the capture and playback worklets into `context`, from a Blob URL so the one script is enough. */
async function loadWorklets(context: AudioContext): Promise<void> {
  const url = URL.createObjectURL(new Blob([WORKLET_SOURCE], { type: 'application/javascript' }));
  try {
    await context.audioWorklet.addModule(url);
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** The capture worklet on `stream`, handing `capture` ~21 ms batches of the microphone. */
function captureMicrophone(context: AudioContext, stream: MediaStream, capture: (samples: Float32Array) => void): AudioWorkletNode {
  const node = new AudioWorkletNode(context, 'parley-capture', { numberOfOutputs: 1, outputChannelCount: [1] });
  node.port.onmessage = (event: MessageEvent<Float32Array>) => capture(event.data);
  // Its output is silence; connected so the graph keeps pulling it.
  context.createMediaStreamSource(stream).connect(node).connect(context.destination);
  return node;
}

/** The thin Web Audio layer: getUserMedia, one AudioContext, the capture and playback worklets. */
async function openBrowserAudio(handlers: AudioHandlers): Promise<AudioIO> {
  const { context, stream } = await openMicrophone();
  try {
    await loadWorklets(context);
    // Not awaited: a page without a user gesture resolves it only once the person interacts.
    void context.resume();
    const capture = captureMicrophone(context, stream, handlers.capture);
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

/** RMS of what `analyser` hears now (its last fftSize samples). */
function levelOf(analyser: AnalyserNode | undefined, buffer: Float32Array<ArrayBuffer>): number {
  if (!analyser) return 0;
  analyser.getFloatTimeDomainData(buffer);
  let squares = 0;
  for (const s of buffer) squares += s * s;
  return Math.sqrt(squares / buffer.length);
}

/**
 * A rendezvous seat: the microphone on an RTCPeerConnection; the other seat's track played by an <audio> element
 * (Chrome plays a remote WebRTC stream through Web Audio only while a media element holds it too) and measured.
 */
async function openBrowserPeer(options: { iceServers: IceServer[] }): Promise<PeerIO> {
  if (typeof RTCPeerConnection === 'undefined') throw new ParleyError('unsupported_browser', 'This browser has no RTCPeerConnection: a rendezvous needs one.');
  const { context, stream } = await openMicrophone();
  const connection = new RTCPeerConnection({ iceServers: options.iceServers });
  // A clone goes on the connection: muting disables it alone, so the microphone's level stays measured.
  for (const track of stream.getAudioTracks()) connection.addTrack(track.clone(), stream);
  void context.resume();
  const microphone = context.createAnalyser();
  context.createMediaStreamSource(stream).connect(microphone);
  let remote: AnalyserNode | undefined;
  const speaker = new Audio();
  speaker.autoplay = true;
  connection.ontrack = (event) => {
    const incoming = event.streams[0] ?? new MediaStream([event.track]);
    speaker.srcObject = incoming;
    void speaker.play().catch(() => undefined);
    remote = context.createAnalyser();
    context.createMediaStreamSource(incoming).connect(remote);
  };
  const buffer = new Float32Array(microphone.fftSize);
  let copying: AudioWorkletNode | undefined;
  return {
    connection: connection as unknown as PeerConnectionLike,
    sampleRate: context.sampleRate,
    // The worklets load only when the worker asks for a copy: a seat without one never runs them.
    copy: async (capture) => {
      await loadWorklets(context);
      copying = captureMicrophone(context, stream, capture);
    },
    levels: () => ({ microphone: levelOf(microphone, buffer), remote: levelOf(remote, buffer) }),
    // The sender keeps its track: a disabled one sends silence, so the connection is not renegotiated.
    mute: (muted) => {
      for (const sender of connection.getSenders()) if (sender.track) sender.track.enabled = !muted;
    },
    close: () => {
      for (const track of [...stream.getTracks(), ...connection.getSenders().map((s) => s.track)]) track?.stop();
      if (copying) copying.port.onmessage = null;
      connection.ontrack = null;
      connection.close();
      speaker.srcObject = null;
      void context.close().catch(() => undefined);
    },
  };
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
  openPeer: openBrowserPeer,
};
