import { parseEgressAllowlist } from '@parley/egress';
import { ManualClock, realClock } from '../clock';
import { ToolServer } from '../testing/tool-server';
import { buildCustomRequest, customFunctionDefinition, runCustomFunction } from './custom-function';
import { MAX_RESULT_BYTES } from './http';
import { CustomFunctionConfig, ToolRuntime } from './types';

const LOCAL = parseEgressAllowlist('127.0.0.1').policy;

function orderTool(url: string, extra: Partial<CustomFunctionConfig['request']> = {}): CustomFunctionConfig {
  return {
    kind: 'custom_function',
    name: 'order_status',
    description: 'Look up an order.',
    request: {
      url: `${url}/orders/{{order_id}}/status`,
      method: 'POST',
      headers: { 'X-Shop': 'north' },
      secret_header_values: { Authorization: 'Bearer s3cret' },
      parameters: [
        { name: 'order_id', type: 'string', required: true, in: 'path' },
        { name: 'verbose', type: 'boolean', in: 'query' },
        { name: 'channel', type: 'string', enum: ['phone', 'web'] },
        { name: 'count', type: 'integer' },
      ],
      ...extra,
    },
  };
}

const runtime = (over: Partial<ToolRuntime> = {}): ToolRuntime => ({
  egress: LOCAL,
  internalHosts: [],
  clock: realClock,
  signal: new AbortController().signal,
  ...over,
});

describe('custom function requests', () => {
  it('tells the model a closed schema built from the parameters', () => {
    expect(customFunctionDefinition(orderTool('https://shop.example')).parameters).toEqual({
      type: 'object',
      properties: {
        order_id: { type: 'string' },
        verbose: { type: 'boolean' },
        channel: { type: 'string', enum: ['phone', 'web'] },
        count: { type: 'integer' },
      },
      required: ['order_id'],
      additionalProperties: false,
    });
  });

  it('fills path placeholders percent-escaped, query arguments in the query string, body ones as JSON', () => {
    const built = buildCustomRequest(orderTool('https://shop.example'), { order_id: 'A/1 ?#', verbose: true, channel: 'web', count: 2 });
    expect(built.url).toBe('https://shop.example/orders/A%2F1%20%3F%23/status?verbose=true');
    expect(built.method).toBe('POST');
    expect(JSON.parse(built.body ?? '')).toEqual({ channel: 'web', count: 2 });
    expect(built.headers).toMatchObject({ 'X-Shop': 'north', Authorization: 'Bearer s3cret', 'content-type': 'application/json' });
  });

  it('fills body_template placeholders JSON-escaped, so a quote in what the caller said cannot break the JSON', () => {
    const config = orderTool('https://shop.example', { body_template: '{"note":"{{channel}}","n":{{count}}}', parameters: [{ name: 'channel', type: 'string' }, { name: 'count', type: 'integer' }] });
    const built = buildCustomRequest({ ...config, request: { ...config.request, url: 'https://shop.example/notes' } }, { channel: 'say "hi"\n\\', count: 3 });
    expect(JSON.parse(built.body ?? '')).toEqual({ note: 'say "hi"\n\\', n: 3 });
  });

  it('sends no body with GET: body arguments go to the query string; method defaults to POST', () => {
    const get = buildCustomRequest(orderTool('https://shop.example', { method: 'GET' }), { order_id: '7', channel: 'phone' });
    expect(get).toMatchObject({ method: 'GET', url: 'https://shop.example/orders/7/status?channel=phone' });
    expect(get.body).toBeUndefined();
    expect(buildCustomRequest(orderTool('https://shop.example', { method: undefined }), { order_id: '7' }).method).toBe('POST');
  });
});

describe('custom function calls (local server, allowed by EGRESS_ALLOWLIST=127.0.0.1)', () => {
  const server = new ToolServer();
  let base = '';
  beforeAll(async () => void (base = await server.start()));
  afterAll(() => server.close());
  beforeEach(() => {
    server.requests.length = 0;
    server.answer(200, '{"status":"shipped"}', 'application/json');
  });

  it('calls the templated URL with the plain and secret headers and gives the model the answer', async () => {
    const outcome = await runCustomFunction(orderTool(base), '{"order_id":"A-17","verbose":false,"count":1}', runtime());
    expect(outcome).toEqual({ ok: true, result: '{"status":"shipped"}' });
    expect(server.requests).toHaveLength(1);
    const [req] = server.requests;
    expect(req).toMatchObject({ method: 'POST', url: '/orders/A-17/status?verbose=false', body: '{"count":1}' });
    expect(req.headers).toMatchObject({ authorization: 'Bearer s3cret', 'x-shop': 'north', 'content-type': 'application/json' });
  });

  it.each([
    ['{"order_id":"1","colour":"red"}', 'unknown argument "colour"'],
    ['{"verbose":true}', 'missing required argument "order_id"'],
    ['{"order_id":1}', '"order_id" must be a string'],
    ['{"order_id":"1","count":1.5}', '"count" must be an integer'],
    ['{"order_id":"1","channel":"fax"}', '"channel" must be one of "phone", "web"'],
    ['{"order_id":".."}', '"order_id" may not be ".."'],
    ['not json', 'the arguments are not valid JSON'],
  ])('refuses %s without any request, and tells the model why', async (args, problem) => {
    const outcome = await runCustomFunction(orderTool(base), args, runtime());
    expect(outcome.ok).toBe(false);
    expect(outcome.result).toContain('Refused, no request was made');
    expect(outcome.result).toContain(problem);
    expect(outcome.error).toContain(problem);
    expect(server.requests).toHaveLength(0);
  });

  it('reports every problem at once', async () => {
    const outcome = await runCustomFunction(orderTool(base), '{"x":1,"channel":"fax"}', runtime());
    expect(outcome.result).toContain('unknown argument "x"; missing required argument "order_id"; "channel" must be one of');
  });

  it('refuses a private address the allowlist does not name, saying only that the service could not be reached', async () => {
    const outcome = await runCustomFunction(orderTool(base), '{"order_id":"1"}', runtime({ egress: { allowlist: [] } }));
    expect(outcome).toEqual({ ok: false, result: 'The tool call failed: the service could not be reached.', error: 'refused by the outbound request guard' });
    expect(outcome.result).not.toContain('127.0.0.1');
    expect(server.requests).toHaveLength(0);
  });

  it('refuses plain http to a host neither INTERNAL_HOSTS nor the allowlist names', async () => {
    const outcome = await runCustomFunction(orderTool(base.replace('127.0.0.1', 'localhost')), '{"order_id":"1"}', runtime());
    expect(outcome.ok).toBe(false);
    expect(server.requests).toHaveLength(0);
  });

  it('says the status of a non-2xx answer, and does not follow redirects', async () => {
    server.answer(404, 'no such order');
    expect(await runCustomFunction(orderTool(base), '{"order_id":"1"}', runtime())).toEqual({
      ok: false,
      result: 'The tool call failed: the service answered with HTTP status 404.',
      error: 'HTTP 404',
    });
    server.respond((_, res) => res.writeHead(302, { location: 'https://elsewhere.example/' }).end());
    expect((await runCustomFunction(orderTool(base), '{"order_id":"1"}', runtime())).error).toBe('HTTP 302');
    expect(server.requests).toHaveLength(2);
  });

  it('cuts a long answer at 4 KB', async () => {
    server.answer(200, 'x'.repeat(10_000));
    const outcome = await runCustomFunction(orderTool(base), '{"order_id":"1"}', runtime());
    expect(outcome.result).toBe(`${'x'.repeat(MAX_RESULT_BYTES)} …(truncated)`);
  });

  it('gives up after timeout_seconds (default 8) on the engine clock', async () => {
    server.hang();
    const clock = new ManualClock();
    const pending = runCustomFunction(orderTool(base), '{"order_id":"1"}', runtime({ clock }));
    await until(() => server.requests.length === 1);
    await clock.advance(7_900);
    let settled = false;
    void pending.then(() => (settled = true));
    await clock.advance(0);
    expect(settled).toBe(false);
    await clock.advance(100);
    expect(await pending).toEqual({ ok: false, result: 'The tool call failed: the service did not answer in time.', error: 'no answer within 8 s' });
  });

  it('is aborted with the turn (barge-in)', async () => {
    server.hang();
    const turn = new AbortController();
    const pending = runCustomFunction(orderTool(base), '{"order_id":"1"}', runtime({ signal: turn.signal }));
    await until(() => server.requests.length === 1);
    turn.abort();
    expect(await pending).toMatchObject({ ok: false, error: 'interrupted' });
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!condition()) throw new Error('condition not met');
}
