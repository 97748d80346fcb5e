import { connect, Socket } from 'node:net';
import Fastify, { FastifyInstance } from 'fastify';
import { LingerLimits, lingerBeforeClose } from './linger';

/** Writes the whole request before reading, as many clients do; `error` is a failed write or read of the socket. */
function sendWhole(port: number, head: string, body: Buffer): Promise<{ status: number; error?: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let error: string | undefined;
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (e) => (error ??= e.message));
    socket.on('close', () => resolve({ status: Number(Buffer.concat(chunks).toString('latin1').split(' ')[1]), error }));
    socket.write(Buffer.concat([Buffer.from(head, 'latin1'), body]));
  });
}

describe('lingering before closing on an early answer', () => {
  let fastify: FastifyInstance;
  let port: number;
  const body = Buffer.alloc(8 * 1024 * 1024, 0x20);

  beforeAll(async () => {
    fastify = Fastify({ bodyLimit: 1024 * 1024 });
    lingerBeforeClose(fastify.server);
    fastify.post('/v1/agents', async () => ({ ok: true }));
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    port = (fastify.server.address() as { port: number }).port;
  });

  afterAll(() => fastify.close());

  const request = (path: string) =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;

  it.each([
    ['a body over the limit', '/v1/agents', 413],
    ['a body to a malformed URL', '/v1/agents/%zz', 400],
  ])('lets a client that writes %s before reading finish its write and read the answer', async (_what, path, status) => {
    const answer = await sendWhole(port, request(path), body);

    expect(answer).toEqual({ status, error: undefined });
  });

  it('gives the answer to fetch too', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/agents`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });

    expect(res.status).toBe(413);
  });

  /** A gateway with a 1 KiB body limit and the given bounds; resolves with how long its side of the first connection lived. */
  async function boundedServer(limits: LingerLimits) {
    const server = Fastify({ bodyLimit: 1024 });
    lingerBeforeClose(server.server, limits);
    const lived = new Promise<number>((resolve) =>
      server.server.once('connection', (socket: Socket) => {
        const opened = Date.now();
        socket.once('close', () => resolve(Date.now() - opened));
      }),
    );
    await server.listen({ port: 0, host: '127.0.0.1' });
    // Half-open: the client keeps its side open after the gateway's FIN, as a client still sending does.
    const client = connect({ port: (server.server.address() as { port: number }).port, host: '127.0.0.1', allowHalfOpen: true });
    client.on('error', () => undefined);
    client.resume();
    return { server, client, lived };
  }

  it('closes the connection once the client has sent more than the byte bound', async () => {
    const { server, client, lived } = await boundedServer({ ms: 60_000, bytes: 64 * 1024 });
    client.write(request('/v1/agents').replace(String(body.length), String(100 * 1024 * 1024)));
    const sending = setInterval(() => client.write(Buffer.alloc(16 * 1024, 0x20)), 5);

    expect(await lived).toBeLessThan(10_000);
    clearInterval(sending);
    client.destroy();
    await server.close();
  });

  it('closes the connection once the time bound has passed while the client stays silent', async () => {
    const { server, client, lived } = await boundedServer({ ms: 300, bytes: 64 * 1024 * 1024 });
    client.write(`${request('/v1/agents').replace(String(body.length), '2000')}${' '.repeat(10)}`);

    expect(await lived).toBeGreaterThanOrEqual(290);
    client.destroy();
    await server.close();
  });

  it('closes at once when the client has already ended its side', async () => {
    const { server, client, lived } = await boundedServer({ ms: 60_000, bytes: 64 * 1024 * 1024 });
    client.end(`${request('/v1/agents').replace(String(body.length), '2000')}${' '.repeat(10)}`);

    expect(await lived).toBeLessThan(5_000);
    client.destroy();
    await server.close();
  });
});
