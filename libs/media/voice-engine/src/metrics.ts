import { Counter, Gauge, Histogram } from 'prom-client';

const seconds = [0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5];

/** The voice engine's metrics (one registry per process, shared by every call on the worker). */
export const engineMetrics = {
  callsInProgress: new Gauge({ name: 'parley_engine_calls_in_progress', help: 'Conversations running on this worker (autoscaling signal)' }),
  stageLatency: new Histogram({
    name: 'parley_engine_stage_latency_seconds',
    help: 'Per-stage latency: stt_final (end of speech to final transcript), llm_first_token, tts_first_audio, response (end of speech to first outbound frame), knowledge (a lookup)',
    labelNames: ['stage'] as const,
    buckets: seconds,
  }),
  bargeIns: new Counter({ name: 'parley_engine_barge_ins_total', help: 'Agent turns cut off by the caller' }),
  fallbacks: new Counter({
    name: 'parley_engine_provider_fallbacks_total',
    help: 'Turns where a speech provider failed and the next configured one took over',
    labelNames: ['kind', 'from', 'to'] as const,
  }),
  vadBatch: new Histogram({
    name: 'parley_engine_vad_batch_windows',
    help: "Windows per run of the Silero VAD (every call's waiting windows run together): small batches cost more per window",
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
  }),
  framesLate: new Counter({ name: 'parley_engine_frames_late_total', help: 'Outbound frames sent more than one frame late' }),
  knowledgeLookups: new Counter({
    name: 'parley_engine_knowledge_lookups_total',
    help: 'Knowledge lookups of turns and of the search_knowledge_base tool by outcome: hit, empty, timeout (over the turn budget: answered without grounding), error, aborted (barge-in)',
    labelNames: ['outcome'] as const,
  }),
};
