// The vendors a call talks to, on real ports and their real wire protocols, in a process of their own so their
// CPU never shares an event loop with the platform or with the simulated callers' clocks:
//   Deepgram live (WebSocket /v1/listen): energy endpointing, a final transcript ENDPOINTING_MS after the speech;
//   an OpenAI-compatible model (POST /v1/chat/completions, streamed): the answer after --llm-ms (ANSWERS in turn);
//     a flow's routing call (JSON, not streamed, its prompt listing "Transitions:") after --route-ms: no edge;
//   OpenAI speech (POST /v1/audio/speech, the `openai` synthesizer): first audio after --tts-ms.
// Started by bench/media.mjs; prints one JSON line with the servers' URLs and keys, then serves until killed.
import { loadLibs } from './build.mjs';

/** The fake recognizer's endpointing: silence after speech before it sends the final transcript. */
export const ENDPOINTING_MS = 300;
/** What the caller says, as the fake recognizer transcribes every utterance (six words: a barge-in too). */
export const CALLER_WORDS = 'What are your opening hours please';
/** The agent's greeting (set on the agent bench/media.mjs creates). */
export const GREETING = 'Hello, thanks for calling.';
/**
 * The agent's answers, in turn: a call's k-th answer is ANSWERS[(k - 1) % 2] (by the user turns the model is sent),
 * so two answers in a row never sound alike. Each is two sentences, about 4 s of the fake voice's audio (50 ms a
 * character), and every sentence here and the greeting has a tone of its own at least 100 Hz from the others (the
 * caller tells 20 ms frames apart by them: agent-speech.mjs): after a barge-in the caller knows by ear whether a frame
 * is the interrupted answer's or the next one's.
 */
export const ANSWERS = [
  'We are open from nine to five on weekdays. Is there anything else I can help with?',
  'We are open weekdays, from nine to five. Can I do anything more for you?',
];
export const KEYS = { deepgram: 'bench-deepgram-key', openai: 'bench-openai-key' };

/** The answer to a conversation whose request carries `messages`: alternating with each user turn. */
function answerTo(messages = []) {
  const userTurns = messages.filter((m) => m.role === 'user').length;
  return ANSWERS[Math.max(0, userTurns - 1) % ANSWERS.length];
}

/** Routing calls answered (a flow agent's, with --flow), reported when the fakes are stopped. */
let routed = 0;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A flow's routing call: one JSON completion whose prompt numbers the transitions (intent-router.ts). */
function isRouting(body) {
  return !body.stream && body.response_format?.type === 'json_object' && body.messages?.some((m) => typeof m.content === 'string' && m.content.includes('\nTransitions:\n'));
}

export async function startVendorFakes({ dist, llmMs, ttsMs, routeMs = llmMs }) {
  const { speech, llm } = loadLibs(dist);
  const deepgram = new speech.FakeDeepgramServer({ apiKey: KEYS.deepgram, detector: { minSilenceMs: ENDPOINTING_MS } });
  // The fake hands out scripted transcripts from one queue, one per utterance of any connection: keep it full.
  const topUp = () => deepgram.utterances(...Array.from({ length: 2000 }, () => CALLER_WORDS));
  topUp();
  setInterval(topUp, 1000).unref();
  const model = new llm.FakeOpenAiServer({ models: ['fake-model'] });
  // Conversation turns stream; a flow's routing call is answered "no edge" (the flow stays) after routeMs; anything
  // else (the calls service's post-call analysis) gets a small JSON answer.
  model.reply(async (body) => {
    if (body.stream) return { content: answerTo(body.messages), firstTokenDelayMs: llmMs };
    if (!isRouting(body)) return JSON.stringify({ summary: 'A benchmark call.' });
    await sleep(routeMs);
    routed++;
    return JSON.stringify({ edge: null, values: {} });
  });
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
  const routeMs = process.argv.includes('--route-ms') ? Number(arg('route-ms')) : undefined;
  const urls = await startVendorFakes({ dist: arg('dist'), llmMs: Number(arg('llm-ms')), ttsMs: Number(arg('tts-ms')), routeMs });
  console.log(JSON.stringify(urls));
  process.on('SIGTERM', () => {
    if (routed) console.error(`vendor fakes: ${routed} flow routing calls answered`);
    process.exit(0);
  });
}
