import Fastify, { FastifyInstance } from 'fastify';
import { openEventStream } from './event-stream';

describe('openEventStream', () => {
  let app: FastifyInstance;
  let url: string;

  beforeAll(async () => {
    app = Fastify();
    // A stream with nothing to send (no call ringing): it stays open and silent.
    app.get('/quiet', (request, reply) => void openEventStream(request, reply, () => undefined));
    url = `${await app.listen({ port: 0, host: '127.0.0.1' })}/quiet`;
  });
  afterAll(() => app.close());

  it('sends its headers at once, before any event', async () => {
    const controller = new AbortController();
    const started = Date.now();
    const res = await fetch(url, { signal: controller.signal });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    controller.abort();
  });
});
