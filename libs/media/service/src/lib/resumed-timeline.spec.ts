import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeWav } from '@parley/audio';
import { callsV1 } from '@parley/contracts';
import { LocalBlobStore } from '@parley/storage';
import { Transcript } from './calls-port';
import { recordingKey, resumedTimeline } from './resumed-timeline';

const CALL = { id: 'call_1', account_id: 'acc_1' } as callsV1.Call;
const TRANSCRIPT: Transcript = {
  turns: [{ role: 'user', text: 'Put me through.', start_ms: 500, end_ms: 1800 } as callsV1.Turn],
  transitions: [{ from_node: 'a', to_node: 'b', at_ms: 2100 } as callsV1.FlowTransition],
};

function deps(transcript: () => Promise<Transcript> = async () => TRANSCRIPT) {
  const warnings: string[] = [];
  const recordings = new LocalBlobStore(mkdtempSync(join(tmpdir(), 'resumed-')));
  return { calls: { getTranscript: transcript }, recordings, warn: (_: Record<string, unknown>, message: string) => void warnings.push(message), warnings };
}

describe('the timeline a resumed stream goes on with', () => {
  it('starts after the latest of the earlier turns, flow moves and recording, with the recording at this rate', async () => {
    const d = deps();
    expect(await resumedTimeline(d, CALL, 8000, true)).toEqual({ transcript: TRANSCRIPT, offsetMs: 2100 });
    await d.recordings.put(recordingKey(CALL), encodeWav(new Int16Array(8000 * 3).fill(7), 8000), 'audio/wav');
    const resumed = await resumedTimeline(d, CALL, 8000, true);
    expect(resumed.offsetMs).toBe(3000);
    expect(resumed.recording?.length).toBe(24000);
    // Not recorded (the agent stopped recording): the recording is not read.
    expect(await resumedTimeline(d, CALL, 8000, false)).toEqual({ transcript: TRANSCRIPT, offsetMs: 2100 });
  });

  it('leaves out a recording at another rate, and a transcript that cannot be read, saying so', async () => {
    const d = deps(async () => Promise.reject(new Error('calls service away')));
    await d.recordings.put(recordingKey(CALL), encodeWav(new Int16Array(16000), 16000), 'audio/wav');
    expect(await resumedTimeline(d, CALL, 8000, true)).toEqual({ transcript: { turns: [], transitions: [] }, offsetMs: 0 });
    expect(d.warnings.sort()).toEqual([
      'earlier recording is in another format; this stream’s recording replaces it',
      'transcript could not be read; resuming without history',
    ]);
  });
});
