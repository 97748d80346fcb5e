import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import WebSocket from 'ws';
import { freePort, RunningPlatform } from '@parley/testing';

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

describe('standalone: start-up on a machine where the embedded PostgreSQL port is taken', () => {
  it('stops with the port and the reason, and a failing exit code', async () => {
    // Another server holds the port, as a second platform started on the same machine would.
    const taken = createServer();
    await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done));
    const pgPort = (taken.address() as { port: number }).port;
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-pg-taken-'));
    const [port, media] = await Promise.all([freePort(), freePort()]);
    try {
      const main = resolve(__dirname, '..', '..', '..', 'dist', 'apps', 'standalone', 'apps', 'standalone', 'src', 'main.js');
      const child = spawn(process.execPath, [main], {
        env: { PATH: process.env['PATH'] ?? '', DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort), PORT: String(port), HOST: '127.0.0.1', MEDIA_PORT: String(media), MEDIA_HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (d) => (output += d));
      child.stderr.on('data', (d) => (output += d));
      const code = await new Promise<number | null>((done) => child.once('exit', done));

      // Before: "start-up failed" with no reason, and exit code 0 (the shutdown awaited a server that never ran).
      expect(output).toContain(`embedded PostgreSQL did not start on 127.0.0.1:${pgPort}`);
      expect(output).toContain('EMBEDDED_PG_PORT');
      expect(code).toBe(1);
    } finally {
      await new Promise((done) => taken.close(done));
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
