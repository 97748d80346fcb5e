import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { RunningPlatform } from '@parley/testing';

/** The browser client as the gateway serves it, built by the gateway's build (nx run gateway:build). */
describe('the browser client script (GET /v1/embed/)', () => {
  let platform: RunningPlatform;

  beforeAll(async () => {
    platform = await RunningPlatform.start();
  });

  afterAll(() => platform?.stop());

  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${platform.baseUrl}${path}`, { headers });

  it('serves the classic script without an API key, as JavaScript with a short cache, an ETag and its versioned URL', async () => {
    const res = await get('/v1/embed/');

    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('public, max-age=300');
    expect(res.headers.get('etag')).toMatch(/^"[\w-]+"$/);
    expect(res.headers.get('content-location')).toMatch(/^\/v1\/embed\/\d+\.\d+\.\d+-[0-9a-f]{10}\/parley\.js$/);
  });

  it('answers 304 to a browser revalidating its copy', async () => {
    const etag = (await get('/v1/embed/')).headers.get('etag')!;
    const res = await get('/v1/embed/', { 'if-none-match': etag });

    expect(res.status).toBe(304);
    expect(await res.text()).toBe('');
  });

  it('sets the global Parley with ParleyCall when run as a classic script', async () => {
    const script = await (await get('/v1/embed/')).text();
    const window: Record<string, unknown> = {};
    runInNewContext(script, window);

    const Parley = window['Parley'] as { ParleyCall: unknown; ParleyError: unknown; VERSION: string };
    expect(typeof Parley.ParleyCall).toBe('function');
    expect(typeof Parley.ParleyError).toBe('function');
    expect(Parley.VERSION).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('exports ParleyCall from the ES module, and serves both at immutable versioned URLs', async () => {
    const current = await get('/v1/embed/parley.mjs');
    const versioned = current.headers.get('content-location')!;
    const file = join(mkdtempSync(join(tmpdir(), 'embed-')), 'parley.mjs');
    writeFileSync(file, await current.text());
    const exported = execFileSync(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(file)}); console.log(Object.keys(m).join(','))`], {
      encoding: 'utf8',
    });

    expect(exported.trim().split(',')).toEqual(expect.arrayContaining(['ParleyCall', 'ParleyError', 'VERSION']));
    for (const path of [versioned, versioned.replace(/\.mjs$/, '.js')]) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    }
    const unknown = await get('/v1/embed/0.0.1-0000000000/parley.js');
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it('lets a page on any origin load it (no origins configured)', async () => {
    const res = await get('/v1/embed/parley.mjs', { origin: 'https://shop.example' });

    expect(res.headers.get('access-control-allow-origin')).toBe('*');
  });
});

const describeWithNats = process.env['NATS_URL'] ? describe : describe.skip;

describeWithNats('the browser client script from a distributed gateway', () => {
  let platform: RunningPlatform;

  beforeAll(async () => {
    platform = await RunningPlatform.start({ mode: 'distributed' });
  });

  afterAll(() => platform?.stop());

  it('is served from the gateway’s own build', async () => {
    const res = await fetch(`${platform.baseUrl}/v1/embed/`);

    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    expect(await res.text()).toContain('var Parley=');
  });
});
