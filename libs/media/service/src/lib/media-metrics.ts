import { Counter, Gauge, Histogram } from 'prom-client';

export const mediaStreamsActive = new Gauge({
  name: 'parley_media_streams_active',
  help: 'Carrier media streams open on this worker',
  labelNames: ['carrier'] as const,
});

export const mediaStreamsTotal = new Counter({
  name: 'parley_media_streams_total',
  help: 'Carrier media streams by carrier and outcome (attached, refused, failed)',
  labelNames: ['carrier', 'outcome'] as const,
});

/** Frames received per carrier and not yet added to mediaFramesIn. */
const framesInTallies = new Map<string, { frames: number }>();

/**
 * Audio frames received, counted in a plain number per carrier (framesInTally) and added to the counter when it is
 * read: a labelled `inc` hashes and checks its labels on every call, and this one is 50 a second per call.
 */
export const mediaFramesIn = new Counter({
  name: 'parley_media_frames_in_total',
  help: 'Audio frames received from carriers',
  labelNames: ['carrier'] as const,
  collect() {
    for (const [carrier, tally] of framesInTallies) {
      if (tally.frames) this.inc({ carrier }, tally.frames);
      tally.frames = 0;
    }
  },
});

/** The running tally of a carrier's frames received, for a stream to count into. */
export function framesInTally(carrier: string): { frames: number } {
  let tally = framesInTallies.get(carrier);
  if (!tally) framesInTallies.set(carrier, (tally = { frames: 0 }));
  return tally;
}

export const transcriptWrites = new Counter({
  name: 'parley_media_transcript_writes_total',
  help: 'Turns, tool-call and flow-transition reports and survey ratings sent to the calls service, by kind (turn, tool_call, flow_transition, rating) and outcome (written, retried: one failed attempt to be retried, refused, given_up: not written by the flush bound at the end of the call)',
  labelNames: ['kind', 'outcome'] as const,
});

export const mediaPlayoutJitter = new Histogram({
  name: 'parley_media_playout_jitter_seconds',
  help: "|Δ − 20 ms| between consecutive agent frames of a run as the stream thread sent them: the worker's own pacing, before the network",
  buckets: [0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.02, 0.05, 0.1],
});
