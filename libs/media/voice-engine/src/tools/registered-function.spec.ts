import { parseEgressAllowlist } from '@parley/egress';
import { realClock } from '../clock';
import { ToolServer } from '../testing/tool-server';
import { checkSchema } from './arguments';
import { runRegisteredFunction } from './registered-function';
import { RegisteredFunction, ToolRuntime } from './types';

const runtime = (): ToolRuntime => ({ egress: parseEgressAllowlist('127.0.0.1').policy, internalHosts: [], clock: realClock, signal: new AbortController().signal });

const schema = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer' }, units: { type: 'string', enum: ['c', 'f'] } },
  required: ['city'],
  additionalProperties: false,
};

describe('registered functions', () => {
  const server = new ToolServer();
  let base = '';
  beforeAll(async () => void (base = await server.start()));
  afterAll(() => server.close());
  beforeEach(() => void (server.requests.length = 0));

  const fn = (extra: Partial<RegisteredFunction> = {}): RegisteredFunction => ({ name: 'weather', description: 'Weather', parameters: schema, url: `${base}/weather`, ...extra });

  it('POSTs the arguments as JSON to the declared URL and returns the answer', async () => {
    server.answer(200, 'Sunny, 21 degrees');
    expect(await runRegisteredFunction(fn(), '{"city":"Oslo","days":2}', runtime())).toEqual({ ok: true, result: 'Sunny, 21 degrees' });
    expect(server.requests[0]).toMatchObject({ method: 'POST', url: '/weather', body: '{"city":"Oslo","days":2}' });
    expect(server.requests[0].headers['content-type']).toBe('application/json');
  });

  it('sends GET arguments as the query string', async () => {
    server.answer(200, 'ok');
    await runRegisteredFunction(fn({ method: 'GET' }), '{"city":"Oslo"}', runtime());
    expect(server.requests[0]).toMatchObject({ method: 'GET', url: '/weather?city=Oslo', body: '' });
  });

  it('refuses arguments outside the schema without a request', async () => {
    const outcome = await runRegisteredFunction(fn(), '{"days":"two","units":"k","extra":1}', runtime());
    expect(outcome.ok).toBe(false);
    expect(outcome.result).toContain('missing required argument "city"');
    expect(outcome.result).toContain('"days" must be integer');
    expect(outcome.result).toContain('"units" must be one of "c", "f"');
    expect(outcome.result).toContain('unknown argument "extra"');
    expect(server.requests).toHaveLength(0);
  });

  it('checks nested objects and arrays of the schema subset', () => {
    const nested = { type: 'object', properties: { items: { type: 'array', items: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] } } } };
    expect(checkSchema({ items: [{ sku: 'a' }, {}] }, nested)).toEqual(['missing required argument "items[1].sku"']);
    expect(checkSchema({ items: 'x' }, nested)).toEqual(['"items" must be array']);
  });
});
