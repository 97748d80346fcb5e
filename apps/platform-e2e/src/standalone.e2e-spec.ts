import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { RunningPlatform } from '@parley/testing';

const KEY = 'vsk_e2e_standalone_key_000001';

/** The media worker child of the standalone process, from the process table. */
function mediaChildOf(parent: number): number | undefined {
  const pids = execFileSync('ps', ['-o', 'pid=', '--ppid', String(parent)], { encoding: 'utf8' }).split('\n').map((l) => Number(l.trim())).filter(Boolean);
  return pids.find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('media-worker.js');
    } catch {
      return false;
    }
  });
}

async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('standalone: one command, the media worker in a process of its own', () => {
  let platform: RunningPlatform;

  beforeAll(async () => {
    platform = await RunningPlatform.start({ mode: 'standalone', bootstrapKeys: [`acme:owner:${KEY}`] });
  });

  afterAll(async () => {
    await platform?.stop();
  });

  it('carries call audio in a child process whose metrics the gateway serves with its own', async () => {
    const parent = platform.processId('standalone');
    expect(parent).toBeDefined();
    const child = mediaChildOf(parent as number);
    expect(child).toBeDefined();
    expect(child).not.toBe(parent);

    // A stream the child refuses is counted in the child; the gateway's /metrics shows the count.
    const ws = new WebSocket(`${platform.mediaUrl}/streams/twilio`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    const start = { streamSid: 'MZ00000000000000000000000000000009', callSid: 'CA00000000000000000000000000000009', tracks: ['inbound'] };
    ws.send(JSON.stringify({ event: 'start', sequenceNumber: '1', streamSid: start.streamSid, start: { ...start, customParameters: { token: 'e30.forged' }, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } } }));
    expect(await closed).toBe(1008);

    const metrics = await (await fetch(`${platform.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/^parley_media_streams_total\{carrier="twilio",outcome="refused"\} 1$/m);
    expect(metrics).toMatch(/^parley_http_request_duration_seconds_count\{/m);
  });

  it('starts the media worker again when it dies, while the API keeps answering', async () => {
    const parent = platform.processId('standalone') as number;
    const child = mediaChildOf(parent) as number;
    process.kill(child, 'SIGKILL');

    const api = platform.api(KEY);
    const created = await api.post('/v1/agents', { name: 'Still here', languages: [{ code: 'en-US' }] });
    expect(created.status).toBe(201);

    const next = await eventually(async () => {
      const pid = mediaChildOf(parent);
      return pid !== undefined && pid !== child ? pid : undefined;
    });
    expect(next).not.toBe(child);
    await eventually(async () => ((await fetch(`${platform.baseUrl}/readyz`)).status === 200 ? true : undefined));
    const media = platform.mediaUrl.replace(/^ws/, 'http');
    expect((await fetch(media)).status).toBe(426);
  });
});
