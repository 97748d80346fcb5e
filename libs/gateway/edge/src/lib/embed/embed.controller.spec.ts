import 'reflect-metadata';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APP_FILTER } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { ProblemFilter } from '../http/problem';
import { EmbedBuild, readEmbedBuild } from './embed-build';
import { CURRENT_CACHE, EMBED_BUILD, EmbedController, IMMUTABLE_CACHE } from './embed.controller';

const BUILD = '1.0.0-0123456789';

function fakeBuild(): EmbedBuild {
  const dir = mkdtempSync(join(tmpdir(), 'embed-'));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ version: '1.0.0', build: BUILD }));
  writeFileSync(join(dir, 'parley.js'), 'var Parley=(()=>({ParleyCall:class{}}))();');
  writeFileSync(join(dir, 'parley.mjs'), 'class ParleyCall{};export{ParleyCall};');
  return readEmbedBuild(dir)!;
}

async function gateway(build: EmbedBuild | null): Promise<NestFastifyApplication> {
  const module = await Test.createTestingModule({
    controllers: [EmbedController],
    providers: [{ provide: EMBED_BUILD, useValue: build }, { provide: APP_FILTER, useClass: ProblemFilter }],
  }).compile();
  const app = module.createNestApplication<NestFastifyApplication>(new FastifyAdapter({ routerOptions: { ignoreTrailingSlash: true } }));
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}

describe('GET /v1/embed/', () => {
  let app: NestFastifyApplication;
  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers });

  beforeAll(async () => (app = await gateway(fakeBuild())));
  afterAll(() => app.close());

  it.each(['/v1/embed/', '/v1/embed', '/v1/embed/parley.js'])('serves the classic script at %s as JavaScript with a short cache and an ETag', async (url) => {
    const res = await get(url);

    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(res.headers['cache-control']).toBe(CURRENT_CACHE);
    expect(res.headers['etag']).toMatch(/^"[\w-]{22}"$/);
    expect(res.headers['content-location']).toBe(`/v1/embed/${BUILD}/parley.js`);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cross-origin-resource-policy']).toBe('cross-origin');
    expect(res.body).toContain('var Parley=');
  });

  it('serves the ES module at /v1/embed/parley.mjs', async () => {
    const res = await get('/v1/embed/parley.mjs');

    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(res.headers['content-location']).toBe(`/v1/embed/${BUILD}/parley.mjs`);
    expect(res.body).toContain('export{ParleyCall}');
  });

  it('answers 304 without a body to an If-None-Match naming the current ETag (in a list, weak, or *), 200 to another', async () => {
    const { etag } = (await get('/v1/embed/')).headers as { etag: string };
    for (const ifNoneMatch of [etag, `"other", ${etag}`, `W/${etag}`, '*']) {
      const res = await get('/v1/embed/', { 'if-none-match': ifNoneMatch });
      expect(res.statusCode).toBe(304);
      expect(res.body).toBe('');
      expect(res.headers['etag']).toBe(etag);
      expect(res.headers['cache-control']).toBe(CURRENT_CACHE);
    }
    expect((await get('/v1/embed/', { 'if-none-match': '"stale"' })).statusCode).toBe(200);
  });

  it('gives the two files different ETags', async () => {
    expect((await get('/v1/embed/parley.js')).headers['etag']).not.toBe((await get('/v1/embed/parley.mjs')).headers['etag']);
  });

  it.each(['parley.js', 'parley.mjs'])('serves the current build’s %s at its versioned URL, immutable', async (name) => {
    const res = await get(`/v1/embed/${BUILD}/${name}`);

    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe(IMMUTABLE_CACHE);
    expect(res.headers['content-type']).toBe('application/javascript; charset=utf-8');
  });

  it('answers a build it does not serve with 404 problem+json', async () => {
    const res = await get('/v1/embed/0.9.0-aaaaaaaaaa/parley.js');

    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ code: 'not_found', detail: expect.stringContaining(BUILD) });
    expect(res.headers['cache-control']).toBeUndefined();
  });

  it('answers HEAD with the headers of GET', async () => {
    const res = await app.inject({ method: 'HEAD', url: '/v1/embed/' });

    expect(res.statusCode).toBe(200);
    expect(res.headers['etag']).toMatch(/^"/);
    expect(res.body).toBe('');
  });

  it('answers 503 service_unavailable when the gateway was built without the client', async () => {
    const bare = await gateway(null);
    const res = await bare.inject({ method: 'GET', url: '/v1/embed/' });
    await bare.close();

    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ code: 'service_unavailable' });
  });
});
