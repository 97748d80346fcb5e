import { parseEgressAllowlist } from './egress-policy';

describe('parseEgressAllowlist', () => {
  it('reads an empty value as an empty allowlist', () => {
    expect(parseEgressAllowlist('')).toEqual({ policy: { allowlist: [] }, problems: [] });
    expect(parseEgressAllowlist(' , ,')).toEqual({ policy: { allowlist: [] }, problems: [] });
  });

  it('normalises hosts, addresses and CIDR ranges of both families', () => {
    const { policy, problems } = parseEgressAllowlist(
      ' Hooks.Example.COM. , 10.0.0.0/8,fd00::/8, 127.0.0.1 , [::1], 2001:DB8:0:0::/64 , _svc.internal',
    );

    expect(problems).toEqual([]);
    expect(policy.allowlist).toEqual([
      'hooks.example.com',
      '10.0.0.0/8',
      'fd00::/8',
      '127.0.0.1/32',
      '::1/128',
      '2001:db8::/64',
      '_svc.internal',
    ]);
  });

  it.each([
    ['10.0.0.0/33', 'is not a valid CIDR range'],
    ['fd00::/129', 'is not a valid CIDR range'],
    ['10.0.0.0/x', 'is not a valid CIDR range'],
    ['example.com/24', 'is not a valid CIDR range'],
    ['*.example.com', 'has a wildcard'],
    ['https://example.com', 'is a URL'],
    ['example.com:8080', 'has a port or scheme'],
    ['fe80::1%eth0', 'has an IPv6 zone id'],
    ['2130706433', 'is a numeric address spelling'],
    ['0177.0.0.1', 'is a numeric address spelling'],
    ['127.1', 'is a numeric address spelling'],
    ['0x7f.0.0.1', 'is a numeric address spelling'],
    ['bad host!', 'is not a host name, IP address or CIDR range'],
    ['-leading.example', 'is not a host name, IP address or CIDR range'],
    [`${'a'.repeat(64)}.example`, 'is not a host name, IP address or CIDR range'],
    ['[1.2.3.4]', 'is not a host name, IP address or CIDR range'],
  ])('reports %s as a problem', (entry, problem) => {
    const { policy, problems } = parseEgressAllowlist(`good.example,${entry}`);

    expect(problems).toEqual([expect.stringContaining(`entry 2 ("${entry}") ${problem}`)]);
    expect(policy.allowlist).toEqual(['good.example']);
  });

  it('reports every bad entry at once and keeps the good ones', () => {
    const { policy, problems } = parseEgressAllowlist('a.example,10.0.0.0/99,b.example,*.c.example');

    expect(policy.allowlist).toEqual(['a.example', 'b.example']);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^entry 2 /);
    expect(problems[1]).toMatch(/^entry 4 /);
  });
});
