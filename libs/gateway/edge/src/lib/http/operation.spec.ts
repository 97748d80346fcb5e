import 'reflect-metadata';
import { Controller, Post } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { IdempotencyStore } from '../edge/idempotency.store';
import { buildOpenApiDocument } from './openapi';
import { Operation } from './operation';

@Controller('v1/things')
class ThingsController {
  @Post()
  @Operation({ summary: 'Make a thing', permission: 'agents:write', idempotent: true, problems: ['conflict'] })
  make(): object {
    return {};
  }

  @Post('plain')
  @Operation({ summary: 'Poke a thing', permission: 'agents:write', problems: ['conflict'] })
  poke(): object {
    return {};
  }
}

describe('Operation', () => {
  it('publishes idempotency_conflict on every route that honours Idempotency-Key, and only there', async () => {
    const module = await Test.createTestingModule({ controllers: [ThingsController], providers: [{ provide: IdempotencyStore, useValue: {} }] }).compile();
    const app = module.createNestApplication(new FastifyAdapter());
    await app.init();
    const paths = buildOpenApiDocument(app).paths as Record<string, { post: { responses: Record<string, { description: string }> } }>;
    await app.close();

    expect(paths['/v1/things'].post.responses['409'].description).toBe('`conflict` or `idempotency_conflict`');
    expect(paths['/v1/things/plain'].post.responses['409'].description).toBe('`conflict`');
  });
});
