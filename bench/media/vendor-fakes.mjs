// The vendors a call talks to, on real ports and their real wire protocols, in a process of their own so their
// CPU never shares an event loop with the platform or with the simulated callers' clocks:
//   Deepgram live (WebSocket /v1/listen): energy endpointing, a final transcript ENDPOINTING_MS after the speech;
//   an OpenAI-compatible model (POST /v1/chat/completions, streamed): the answer after --llm-ms;
//   OpenAI speech (POST /v1/audio/speech, the `openai` synthesizer): first audio after --tts-ms.
// Started by bench/media.mjs; prints one JSON line with the servers' URLs and keys, then serves until killed.
import { loadLibs } from './build.mjs';

/** The fake recognizer's endpointing: silence after speech before it sends the final transcript. */
export const ENDPOINTING_MS = 300;
/** What the caller says, as the fake recognizer transcribes every utterance (six words: a barge-in too). */
export const CALLER_WORDS = 'What are your opening hours please';
/** The agent's greeting (set on the agent bench/media.mjs creates). */
export const GREETING = 'Hello, thanks for calling.';
/** The agent's answer: two sentences, about 3.5 s of the fake voice's audio (50 ms a character). */
export const ANSWER = 'We are open from nine to five on weekdays. Is there anything else I can help with?';
export const KEYS = { deepgram: 'bench-deepgram-key', openai: 'bench-openai-key' };

export async function startVendorFakes({ dist, llmMs, ttsMs }) {
  const { speech, llm } = loadLibs(dist);
  const deepgram = new speech.FakeDeepgramServer({ apiKey: KEYS.deepgram, detector: { minSilenceMs: ENDPOINTING_MS } });
  // The fake hands out scripted transcripts from one queue, one per utterance of any connection: keep it full.
  const topUp = () => deepgram.utterances(...Array.from({ length: 2000 }, () => CALLER_WORDS));
  topUp();
  setInterval(topUp, 1000).unref();
  const model = new llm.FakeOpenAiServer({ models: ['fake-model'] });
  // Conversation turns stream; anything else (the calls service's post-call analysis) gets a small JSON answer.
  model.reply((body) => (body.stream ? { content: ANSWER, firstTokenDelayMs: llmMs } : JSON.stringify({ summary: 'A benchmark call.' })));
  const voice = new speech.FakeOpenAiSpeechServer({ apiKey: KEYS.openai, firstByteDelayMs: ttsMs });
  const [deepgramUrl, llmUrl, speechUrl] = await Promise.all([deepgram.start(), model.start(), voice.start()]);
  // The fakes keep every request for tests' assertions; a long run must not grow without bound.
  setInterval(() => {
    deepgram.connections.splice(0, Math.max(0, deepgram.connections.length - 1000));
    model.requests.length = 0;
    voice.requests.length = 0;
  }, 5000).unref();
  return { deepgramUrl, llmUrl, speechUrl, keys: KEYS };
}

if (process.argv[1] === import.meta.filename) {
  const arg = (name) => process.argv[process.argv.indexOf(`--${name}`) + 1];
  const urls = await startVendorFakes({ dist: arg('dist'), llmMs: Number(arg('llm-ms')), ttsMs: Number(arg('tts-ms')) });
  console.log(JSON.stringify(urls));
  process.on('SIGTERM', () => process.exit(0));
}
