import { Readable } from 'node:stream';
import { callsV1 } from '@parley/contracts';
import { parseWav } from '@parley/audio';
import { BlobStore } from '@parley/storage';
import { CallsPort, Transcript } from './calls-port';

/** Where a call's recording is stored: one object per call, written again by each of its streams. */
export function recordingKey(call: Pick<callsV1.Call, 'account_id' | 'id'>): string {
  return `recordings/${call.account_id}/${call.id}.wav`;
}

/**
 * Where a stream that resumes a call (a transfer that did not connect) picks the call up: its transcript so far, the
 * offset at which this stream's timeline starts, and the call's recording so far.
 */
export interface ResumedTimeline {
  transcript: Transcript;
  /**
   * The end of what the call's earlier streams left: turns, flow moves and recording. This stream's offsets count
   * on from it, so turns stay offsets from the start of the call and the recording goes on after the first part.
   * The time the transfer rang is in neither: nobody talked to the agent then.
   */
  offsetMs: number;
  /** The earlier streams' recording at this stream's sample rate; absent when there is none or it cannot be used. */
  recording?: Int16Array;
}

interface Deps {
  calls: Pick<CallsPort, 'getTranscript'>;
  recordings: BlobStore;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Reads what the call's earlier streams left; a read that fails leaves that part out (the call goes on). */
export async function resumedTimeline(deps: Deps, call: callsV1.Call, sampleRate: number, recorded: boolean): Promise<ResumedTimeline> {
  const [transcript, recording] = await Promise.all([
    deps.calls.getTranscript({ account_id: call.account_id, id: call.id }).catch((err: unknown) => {
      deps.warn({ err, callId: call.id }, 'transcript could not be read; resuming without history');
      return { turns: [], transitions: [] } as Transcript;
    }),
    recorded ? earlierRecording(deps, call, sampleRate) : undefined,
  ]);
  const ends = [
    ...transcript.turns.map((t) => Number(t.end_ms)),
    ...transcript.transitions.map((t) => Number(t.at_ms)),
    recording ? (recording.length * 1000) / sampleRate : 0,
  ];
  return { transcript, offsetMs: Math.max(0, ...ends.filter(Number.isFinite)), ...(recording ? { recording } : {}) };
}

async function earlierRecording(deps: Deps, call: callsV1.Call, sampleRate: number): Promise<Int16Array | undefined> {
  try {
    const object = await deps.recordings.get(recordingKey(call));
    if (!object) return undefined;
    const wav = parseWav(await bytes(object.body));
    if (wav.sampleRate === sampleRate && wav.channels === 1) return wav.samples;
    deps.warn({ callId: call.id, sampleRate: wav.sampleRate, channels: wav.channels }, 'earlier recording is in another format; this stream’s recording replaces it');
  } catch (err) {
    deps.warn({ err, callId: call.id }, 'earlier recording could not be read; this stream’s recording replaces it');
  }
  return undefined;
}

async function bytes(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}
