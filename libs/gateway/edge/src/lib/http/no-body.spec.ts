import 'reflect-metadata';
import { Body, Controller, Delete, HttpCode, INestApplication, Post } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { buildOpenApiDocument } from './openapi';
import { NoBody, NoBodyGuard } from './no-body';
import { ProblemFilter } from './problem';

const acted: string[] = [];

@Controller('v1/things')
class ThingsController {
  @Post(':id/poke')
  @HttpCode(200)
  @NoBody()
  poke(): { ok: true } {
    acted.push('poke');
    return { ok: true };
  }

  // No @NoBody(): a handler without @Body() takes no body all the same.
  @Delete(':id')
  @HttpCode(200)
  remove(): { ok: true } {
    acted.push('remove');
    return { ok: true };
  }

  @Post(':id/nudge')
  @HttpCode(200)
  nudge(): { ok: true } {
    acted.push('nudge');
    return { ok: true };
  }

  @Post(':id/rename')
  @HttpCode(200)
  rename(@Body() body: Record<string, unknown>): { ok: true } {
    acted.push(`rename ${JSON.stringify(body)}`);
    return { ok: true };
  }
}

describe('operations without a body', () => {
  let app: NestFastifyApplication;

  beforeAll(async () => {
    const module = await Test.createTestingModule({
      controllers: [ThingsController],
      providers: [
        { provide: APP_FILTER, useClass: ProblemFilter },
        { provide: APP_GUARD, useClass: NoBodyGuard },
      ],
    }).compile();
    app = module.createNestApplication<NestFastifyApplication>(new FastifyAdapter());
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
  });

  afterAll(() => app?.close());
  beforeEach(() => (acted.length = 0));

  const poke = (payload?: string) =>
    app.inject({ method: 'POST', url: '/v1/things/t_1/poke', ...(payload === undefined ? {} : { payload, headers: { 'content-type': 'application/json' } }) });

  it('act when no body or an empty object is sent', async () => {
    expect((await poke()).statusCode).toBe(200);
    expect((await poke('{}')).statusCode).toBe(200);
    expect(acted).toEqual(['poke', 'poke']);
  });

  it('refuse unknown fields with 400 invalid_request naming each one, and do nothing', async () => {
    const res = await poke('{"reason":"x","force":true}');
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({
      code: 'invalid_request',
      errors: [
        { field: 'reason', message: 'is not a known field' },
        { field: 'force', message: 'is not a known field' },
      ],
    });
    expect(acted).toEqual([]);
  });

  it.each(['null', '[]', '[{}]', '"text"', '7', 'true'])('refuse a body that is not an object (%s) and do nothing', async (payload) => {
    const res = await poke(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'invalid_request' });
    expect(acted).toEqual([]);
  });

  it('are published in the OpenAPI document with an optional, empty-object body', () => {
    const operation = buildOpenApiDocument(app as INestApplication).paths['/v1/things/{id}/poke']?.post;
    expect(operation?.requestBody).toMatchObject({
      required: false,
      content: { 'application/json': { schema: { type: 'object', additionalProperties: false, maxProperties: 0 } } },
    });
  });

  const send = (method: 'POST' | 'DELETE', url: string, payload: string) =>
    app.inject({ method, url, payload, headers: { 'content-type': 'application/json' } });

  it('refuse a body on every handler that takes none, declared with @NoBody() or not, whatever the method', async () => {
    for (const [method, url] of [['DELETE', '/v1/things/t_1'], ['POST', '/v1/things/t_1/nudge']] as const) {
      const res = await send(method, url, '{"force":true}');
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'invalid_request', errors: [{ field: 'force' }] });
      expect((await send(method, url, '{}')).statusCode).toBe(200);
    }
    expect(acted).toEqual(['remove', 'nudge']);
  });

  it('leave bodies to handlers that take one', async () => {
    expect((await send('POST', '/v1/things/t_1/rename', '{"name":"x"}')).statusCode).toBe(200);
    expect(acted).toEqual(['rename {"name":"x"}']);
  });
});
