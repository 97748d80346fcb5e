import { parseEgressAllowlist } from './egress-policy';
import { httpAllowed, parseHttpHosts, webhookUrlProblem, WebhookUrlRules } from './webhook-url';

const rules = (allowlist: string, httpHosts: string): WebhookUrlRules => ({
  egress: parseEgressAllowlist(allowlist).policy,
  httpHosts: parseHttpHosts(httpHosts),
  resolve: async () => ['93.184.215.14'],
});

describe('webhook endpoint URL rule', () => {
  it('accepts https to a public host', async () => {
    expect(await webhookUrlProblem('https://hooks.example.com/parley', rules('', ''))).toBeUndefined();
  });

  it('refuses plain http with and without EGRESS_ALLOWLIST naming the host', async () => {
    for (const allowlist of ['', '127.0.0.1', 'hooks.example.com', '0.0.0.0/0']) {
      for (const url of ['http://127.0.0.1:9000/hook', 'http://hooks.example.com/hook']) {
        expect(await webhookUrlProblem(url, rules(allowlist, ''))).toMatch(/scheme must be https.*WEBHOOK_ALLOW_HTTP_HOSTS/);
      }
    }
  });

  it('allows http only to the hosts WEBHOOK_ALLOW_HTTP_HOSTS lists, whose addresses EGRESS_ALLOWLIST must still exempt', async () => {
    expect(await webhookUrlProblem('http://127.0.0.1:9000/hook', rules('127.0.0.1', '127.0.0.1'))).toBeUndefined();
    expect(await webhookUrlProblem('http://127.0.0.2:9000/hook', rules('127.0.0.0/8', '127.0.0.1'))).toMatch(/scheme/);
    expect(await webhookUrlProblem('http://127.0.0.1:9000/hook', rules('', '127.0.0.1'))).toMatch(/loopback/);
    expect(await webhookUrlProblem('http://hooks.example.com/hook', rules('', 'HOOKS.example.com'))).toBeUndefined();
  });

  it('keeps the address rules for https', async () => {
    expect(await webhookUrlProblem('https://169.254.169.254/', rules('', '169.254.169.254'))).toMatch(/link-local|metadata/);
    expect(await webhookUrlProblem('https://good.example@hooks.example.com/', rules('', ''))).toMatch(/credentials/);
  });

  it('matches http hosts exactly, IPv6 brackets and case aside', () => {
    const hosts = parseHttpHosts(' [::1] , Dev.Local ');
    expect(hosts).toEqual(['::1', 'dev.local']);
    expect(httpAllowed('http://[::1]:8080/', hosts)).toBe(true);
    expect(httpAllowed('http://dev.local./x', hosts)).toBe(true);
    expect(httpAllowed('http://sub.dev.local/x', hosts)).toBe(false);
    expect(httpAllowed('not a url', hosts)).toBe(false);
  });
});
