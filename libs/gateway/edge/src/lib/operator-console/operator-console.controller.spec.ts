import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { Script } from 'node:vm';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { OPERATOR_CONSOLE_SCRIPT } from './operator-console-page';
import { OperatorConsoleController } from './operator-console.controller';

const hashOf = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

describe('GET /operator (the operator console page)', () => {
  let app: NestFastifyApplication;

  beforeAll(async () => {
    const module = await Test.createTestingModule({ controllers: [OperatorConsoleController] }).compile();
    app = module.createNestApplication<NestFastifyApplication>(new FastifyAdapter());
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
  });
  afterAll(() => app.close());

  it('serves the page without a key, loading the embed client, unframeable and never cached stale', async () => {
    const res = await app.inject({ method: 'GET', url: '/operator' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.body).toContain('<script src="/v1/embed/"></script>');
    expect(res.body).toContain('<label for="tokenInput">Console token</label>');
  });

  it('allows exactly its own inline script and style by hash, no framing, no form target', async () => {
    const res = await app.inject({ method: 'GET', url: '/operator' });
    const csp = String(res.headers['content-security-policy']);
    const inline = (tag: string) => [...res.body.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) => m[1]);
    expect(inline('script')).toEqual([OPERATOR_CONSOLE_SCRIPT]);
    expect(csp).toContain(`script-src 'self' blob: ${hashOf(OPERATOR_CONSOLE_SCRIPT)}`);
    expect(csp).toContain(`style-src ${hashOf(inline('style')[0])}`);
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/frame-ancestors 'none'/);
    expect(csp).toMatch(/form-action 'none'/);
  });

  it('ships a script that parses, takes the token from the fragment, keeps it in memory only and sends it as a header only', () => {
    expect(() => new Script(OPERATOR_CONSOLE_SCRIPT)).not.toThrow();
    expect(OPERATOR_CONSOLE_SCRIPT).toContain("new URLSearchParams(location.hash.slice(1)).get('token')");
    expect(OPERATOR_CONSOLE_SCRIPT).not.toMatch(/[?&]token=|localStorage|sessionStorage|document\.cookie/);
    expect(OPERATOR_CONSOLE_SCRIPT.match(/authorization: 'Bearer ' \+ session\.token/g)).toHaveLength(2);
  });
});
