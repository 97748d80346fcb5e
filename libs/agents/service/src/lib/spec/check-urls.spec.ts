import { checkUrlFields, UrlRules, urlFields } from './check-urls';
import { AgentSpec } from './agent-spec';

const names: Record<string, string[]> = { 'hooks.example.com': ['93.184.216.34'], 'sneaky.example.com': ['127.0.0.1'], 'tools.internal': ['10.0.0.5'] };
const rules = (over: Partial<UrlRules> = {}): UrlRules => ({
  egress: { allowlist: [] },
  internalHosts: [],
  webhookHttpHosts: [],
  resolve: async (host) => {
    if (!names[host]) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return names[host];
  },
  ...over,
});

const agent = (url: string): Partial<AgentSpec> => ({
  webhook_url: url,
  tool_configs: [
    { kind: 'transfer_call', name: 't', description: 't', transfer: { destination: '+15550100000', webhook_url: url } },
    { kind: 'custom_function', name: 'f', description: 'f', request: { url } },
  ],
});

const refusedFields = async (spec: Partial<AgentSpec>, r = rules(), prefix = '') =>
  (await checkUrlFields(urlFields(spec, prefix), r)).map((p) => p.field);

const ALL = ['webhook_url', 'tool_configs[0].transfer.webhook_url', 'tool_configs[1].request.url'];

describe('URL fields of agents and groups get the webhook endpoints’ registration check', () => {
  it.each([
    'http://127.0.0.1/',
    'https://169.254.169.254/latest/meta-data/',
    'https://[::ffff:127.0.0.1]/',
    'https://2130706433/',
    'https://0x7f.1/',
    'https://good.example@127.0.0.1/',
    'https://user:pass@hooks.example.com/',
    'https://10.1.2.3/',
    'https://[::1]/',
    'https://[64:ff9b::7f00:1]/',
    'https://localhost/',
    'https://sneaky.example.com/',
    'https://nowhere.example.com/',
    'ftp://hooks.example.com/',
  ])('refuses %s in every URL field, naming each field', async (url) => {
    expect(await refusedFields(agent(url))).toEqual(ALL);
  });

  it('accepts public https URLs, with placeholders', async () => {
    expect(await refusedFields(agent('https://hooks.example.com/orders/{{order_id}}'))).toEqual([]);
  });

  it('says why, in the problem message', async () => {
    const [problem] = await checkUrlFields(urlFields({ webhook_url: 'https://169.254.169.254/' }), rules());
    expect(problem).toEqual({ field: 'webhook_url', message: expect.stringMatching(/^is refused: 169\.254\.169\.254 is .*link-local/) });
  });

  it('lets tool requests, and only them, use http towards INTERNAL_HOSTS; the address rules still apply', async () => {
    const r = rules({ internalHosts: ['tools.internal'], egress: { allowlist: ['tools.internal'] } });
    expect(await refusedFields(agent('http://tools.internal/x'), r)).toEqual(['webhook_url']);
    const unlisted = rules({ internalHosts: ['tools.internal'] });
    expect(await refusedFields(agent('http://tools.internal/x'), unlisted)).toEqual(ALL);
  });

  it('exempts what EGRESS_ALLOWLIST lists from the address rules, not from https', async () => {
    const r = rules({ egress: { allowlist: ['127.0.0.1', 'sneaky.example.com'] } });
    expect(await refusedFields(agent('https://127.0.0.1:8443/'), r)).toEqual([]);
    expect(await refusedFields(agent('https://sneaky.example.com/'), r)).toEqual([]);
    expect(await refusedFields(agent('http://127.0.0.1/'), r)).toEqual(ALL);
  });

  it('lets a webhook_url, and only it, use http towards WEBHOOK_ALLOW_HTTP_HOSTS, as webhook endpoints may', async () => {
    const r = rules({ webhookHttpHosts: ['127.0.0.1'], egress: { allowlist: ['127.0.0.1'] } });
    expect(await refusedFields(agent('http://127.0.0.1:9000/hook'), r)).toEqual(['tool_configs[0].transfer.webhook_url', 'tool_configs[1].request.url']);
    expect(await refusedFields({ webhook_url: 'http://127.0.0.1:9000/hook' }, r, 'defaults.')).toEqual([]);
    const [problem] = await checkUrlFields(urlFields({ webhook_url: 'http://hooks.example.com/' }), rules());
    expect(problem).toEqual({ field: 'webhook_url', message: expect.stringMatching(/^is refused: .*https.*WEBHOOK_ALLOW_HTTP_HOSTS/) });
  });

  it('checks a group’s defaults under defaults.', async () => {
    expect(await refusedFields({ webhook_url: 'https://127.0.0.1/' }, rules(), 'defaults.')).toEqual(['defaults.webhook_url']);
  });
});
