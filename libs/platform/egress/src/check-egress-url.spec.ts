import { checkEgressUrl } from './check-egress-url';
import { EgressPolicy, EgressRefused } from './egress-policy';

const NO_ALLOWLIST: EgressPolicy = { allowlist: [] };

/** A resolver answering from a table; names it does not know fail like DNS does. */
function resolverOf(table: Record<string, string[]>) {
  return jest.fn(async (host: string) => {
    const answer = table[host];
    if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return answer;
  });
}

const DNS = {
  'public.example': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  'internal.example': ['10.0.0.5'],
  'mixed.example': ['93.184.216.34', '192.168.1.20'],
  'metadata.example': ['169.254.169.254'],
  'mapped.example': ['::ffff:127.0.0.1'],
  'ula.example': ['fd00::5'],
  'empty.example': [],
  'garbage.example': ['not-an-address'],
};

async function refusal(url: string, policy = NO_ALLOWLIST, options: { allowHttp?: boolean } = {}) {
  const resolve = resolverOf(DNS);
  const error = await checkEgressUrl(url, policy, { ...options, resolve }).then(
    () => undefined,
    (err: unknown) => err,
  );
  return { error, resolve };
}

describe('checkEgressUrl', () => {
  describe('refuses forbidden literal addresses', () => {
    it.each([
      // loopback
      ['https://127.0.0.1/', 'loopback'],
      ['https://127.255.255.254/hook', 'loopback'],
      ['https://[::1]/', 'loopback'],
      // unspecified
      ['https://0.0.0.0/', 'unspecified'],
      ['https://0.1.2.3/', 'unspecified'],
      ['https://[::]/', 'unspecified'],
      // private
      ['https://10.0.0.1/', 'private'],
      ['https://172.16.0.1/', 'private'],
      ['https://172.31.255.255/', 'private'],
      ['https://192.168.1.1:8443/', 'private'],
      // carrier-grade NAT
      ['https://100.64.0.1/', 'carrier-grade NAT'],
      ['https://100.127.255.254/', 'carrier-grade NAT'],
      // link-local, cloud metadata
      ['https://169.254.0.1/', 'link-local'],
      ['https://169.254.169.254/latest/meta-data/', 'cloud metadata'],
      ['https://[fe80::1]/', 'link-local'],
      ['https://[febf:ffff::1]/', 'link-local'],
      // IPv6 unique-local
      ['https://[fc00::1]/', 'unique-local'],
      ['https://[fd12:3456:789a::1]/', 'unique-local'],
      // multicast, broadcast, reserved
      ['https://224.0.0.1/', 'multicast'],
      ['https://239.255.255.250/', 'multicast'],
      ['https://[ff02::1]/', 'multicast'],
      ['https://255.255.255.255/', 'broadcast'],
      ['https://240.0.0.1/', 'reserved'],
      ['https://192.0.0.8/', 'IETF protocol'],
      // benchmarking, documentation
      ['https://198.18.0.1/', 'benchmarking'],
      ['https://198.19.255.255/', 'benchmarking'],
      ['https://192.0.2.1/', 'documentation'],
      ['https://198.51.100.7/', 'documentation'],
      ['https://203.0.113.9/', 'documentation'],
      ['https://[2001:db8::1]/', 'documentation'],
      // IPv6 forms of forbidden IPv4
      ['https://[::ffff:127.0.0.1]/', 'IPv4-mapped form of 127.0.0.1, a loopback'],
      ['https://[::ffff:7f00:1]/', 'IPv4-mapped form of 127.0.0.1, a loopback'],
      ['https://[0:0:0:0:0:ffff:10.0.0.1]/', 'IPv4-mapped form of 10.0.0.1, a private'],
      ['https://[::ffff:169.254.169.254]/', 'IPv4-mapped form of 169.254.169.254, the cloud metadata'],
      ['https://[::ffff:0:7f00:1]/', 'IPv4-translated form of 127.0.0.1'],
      ['https://[::127.0.0.1]/', 'IPv4-compatible'],
      ['https://[::a00:1]/', 'IPv4-compatible'],
      ['https://[64:ff9b::127.0.0.1]/', 'NAT64 form of 127.0.0.1'],
      ['https://[64:ff9b::a9fe:a9fe]/', 'NAT64 form of 169.254.169.254'],
      ['https://[64:ff9b:1::a00:1]/', 'local-use NAT64'],
      ['https://[2002:7f00:1::1]/', '6to4 form of 127.0.0.1'],
      ['https://[2002:c0a8:101::]/', '6to4 form of 192.168.1.1'],
      // other special IPv6
      ['https://[2001::1]/', 'Teredo'],
      ['https://[fec0::1]/', 'site-local'],
      ['https://[100::1]/', 'discard'],
    ])('%s (%s)', async (url, reason) => {
      const { error, resolve } = await refusal(url);

      expect(error).toBeInstanceOf(EgressRefused);
      expect((error as EgressRefused).reason).toContain(reason);
      expect(resolve).not.toHaveBeenCalled();
    });
  });

  describe('refuses odd spellings of forbidden addresses and names', () => {
    it.each([
      ['https://2130706433/', '127.0.0.1 is a loopback'],
      ['http://2130706433/', '127.0.0.1 is a loopback'],
      ['https://0177.0.0.1/', '127.0.0.1 is a loopback'],
      ['https://0x7f.0.0.1/', '127.0.0.1 is a loopback'],
      ['https://0x7f000001/', '127.0.0.1 is a loopback'],
      ['https://017700000001/', '127.0.0.1 is a loopback'],
      ['https://127.1/', '127.0.0.1 is a loopback'],
      ['https://0x7f.1/', '127.0.0.1 is a loopback'],
      ['https://127.000.000.001/', '127.0.0.1 is a loopback'],
      ['https://127.0.0.1./', '127.0.0.1 is a loopback'],
      ['https://0/', '0.0.0.0 is an unspecified'],
      ['https://0xa9fea9fe/', '169.254.169.254 is the cloud metadata'],
      ['https://2852039166/', '169.254.169.254 is the cloud metadata'],
      ['https://012.0.0.1/', '10.0.0.1 is a private'],
      ['https://１２７.０.０.１/', '127.0.0.1 is a loopback'],
      ['https://localhost/', '"localhost" is a loopback name'],
      ['https://LOCALHOST:8443/', '"localhost" is a loopback name'],
      ['https://localhost./', '"localhost" is a loopback name'],
      ['https://localhost../', '"localhost" is a loopback name'],
      ['https://api.localhost/', '"api.localhost" is a loopback name'],
      ['https://a.b.LocalHost./', '"a.b.localhost" is a loopback name'],
    ])('%s', async (url, reason) => {
      const { error, resolve } = await refusal(url, NO_ALLOWLIST, { allowHttp: true });

      expect(error).toBeInstanceOf(EgressRefused);
      expect((error as EgressRefused).reason).toContain(reason);
      expect(resolve).not.toHaveBeenCalled();
    });
  });

  describe('refuses host names that resolve to forbidden addresses', () => {
    it.each([
      ['https://internal.example/hook', '"internal.example" resolves to 10.0.0.5, a private address'],
      ['https://INTERNAL.example./hook', '"internal.example" resolves to 10.0.0.5, a private address'],
      ['https://mixed.example/', '"mixed.example" resolves to 192.168.1.20, a private address'],
      ['https://metadata.example/', 'resolves to 169.254.169.254, the cloud metadata address'],
      ['https://mapped.example/', 'resolves to ::ffff:7f00:1, an IPv4-mapped form of 127.0.0.1'],
      ['https://ula.example/', 'resolves to fd00::5, a unique-local address'],
      ['https://empty.example/', '"empty.example" resolves to no address'],
      ['https://garbage.example/', 'which is not an IP address'],
      ['https://nowhere.example/', '"nowhere.example" could not be resolved (ENOTFOUND)'],
    ])('%s', async (url, reason) => {
      const { error, resolve } = await refusal(url);

      expect(error).toBeInstanceOf(EgressRefused);
      expect((error as EgressRefused).reason).toContain(reason);
      expect(resolve).toHaveBeenCalledTimes(1);
    });
  });

  describe('refuses URLs it will not call at all', () => {
    it.each([
      ['http://public.example/', 'the scheme must be https'],
      ['ftp://public.example/', 'the scheme must be https'],
      ['file:///etc/passwd', 'the scheme must be https'],
      ['javascript:alert(1)', 'the scheme must be https'],
      ['gopher://public.example:70/', 'the scheme must be https'],
      ['https://user:secret@public.example/', 'credentials in the URL are not allowed'],
      ['https://token@public.example/', 'credentials in the URL are not allowed'],
      ['not a url', 'not a valid absolute URL'],
      ['/relative/path', 'not a valid absolute URL'],
      ['https://[fe80::1%25eth0]/', 'not a valid absolute URL'],
    ])('%s', async (url, reason) => {
      const { error, resolve } = await refusal(url);

      expect(error).toBeInstanceOf(EgressRefused);
      expect((error as EgressRefused).reason).toBe(reason);
      expect((error as EgressRefused).message).toBe(`Outbound request refused: ${reason}`);
      expect(resolve).not.toHaveBeenCalled();
    });

    it('accepts http only when allowed, and then no other scheme', async () => {
      expect((await refusal('http://public.example/', NO_ALLOWLIST, { allowHttp: true })).error).toBeUndefined();
      expect(
        ((await refusal('ftp://public.example/', NO_ALLOWLIST, { allowHttp: true })).error as EgressRefused).reason,
      ).toBe('the scheme must be https or http');
    });
  });

  describe('allows public targets', () => {
    it.each([
      'https://93.184.216.34/',
      'https://8.8.8.8:8443/hooks?x=1',
      'https://[2606:4700:4700::1111]/',
      'https://[::ffff:8.8.8.8]/',
      'https://[64:ff9b::808:808]/',
      'https://[2002:808:808::1]/',
      'https://100.63.255.255/',
      'https://100.128.0.1/',
      'https://172.32.0.1/',
      'https://169.253.255.255/',
      'https://public.example/hook',
      'https://Public.Example./hook',
    ])('%s', async (url) => {
      expect((await refusal(url)).error).toBeUndefined();
    });

    it('needs no resolver for literal addresses and localhost names', async () => {
      await expect(checkEgressUrl('https://8.8.8.8/', NO_ALLOWLIST)).resolves.toBeUndefined();
      await expect(checkEgressUrl('https://localhost/', NO_ALLOWLIST)).rejects.toThrow(EgressRefused);
    });
  });

  describe('allowlist', () => {
    it('exempts a listed host, matched case-insensitively and without asking DNS', async () => {
      const policy = { allowlist: ['Internal.Example'] };

      for (const url of ['https://internal.example/', 'https://INTERNAL.EXAMPLE./x']) {
        const { error, resolve } = await refusal(url, policy);
        expect(error).toBeUndefined();
        expect(resolve).not.toHaveBeenCalled();
      }
      expect((await refusal('https://other.internal.example/', policy)).error).toBeInstanceOf(EgressRefused);
      expect((await refusal('https://mixed.example/', policy)).error).toBeInstanceOf(EgressRefused);
    });

    it('exempts localhost only when listed by that name', async () => {
      const policy = { allowlist: ['localhost'] };

      expect((await refusal('https://localhost:8443/', policy)).error).toBeUndefined();
      expect((await refusal('https://localhost./', policy)).error).toBeUndefined();
      expect((await refusal('https://api.localhost/', policy)).error).toBeInstanceOf(EgressRefused);
      expect((await refusal('https://127.0.0.1/', policy)).error).toBeInstanceOf(EgressRefused);
    });

    it('exempts addresses inside a listed IPv4 CIDR, literal or resolved', async () => {
      const policy = { allowlist: ['10.0.0.0/8'] };

      expect((await refusal('https://10.1.2.3/', policy)).error).toBeUndefined();
      expect((await refusal('https://internal.example/', policy)).error).toBeUndefined();
      expect((await refusal('https://[::ffff:10.9.9.9]/', policy)).error).toBeUndefined();
      expect((await refusal('https://192.168.1.1/', policy)).error).toBeInstanceOf(EgressRefused);
      expect((await refusal('https://mixed.example/', policy)).error).toBeInstanceOf(EgressRefused);
    });

    it('exempts exactly one host with a /32 and a bare address', async () => {
      for (const entry of ['127.0.0.1/32', '127.0.0.1']) {
        const policy = { allowlist: [entry] };
        expect((await refusal('http://127.0.0.1:3000/', policy, { allowHttp: true })).error).toBeUndefined();
        expect((await refusal('http://2130706433:3000/', policy, { allowHttp: true })).error).toBeUndefined();
        expect((await refusal('http://127.0.0.2/', policy, { allowHttp: true })).error).toBeInstanceOf(EgressRefused);
        expect((await refusal('http://[::1]/', policy, { allowHttp: true })).error).toBeInstanceOf(EgressRefused);
      }
    });

    it('exempts addresses inside a listed IPv6 CIDR', async () => {
      const policy = { allowlist: ['fd00::/8'] };

      expect((await refusal('https://[fd00::1]/', policy)).error).toBeUndefined();
      expect((await refusal('https://ula.example/', policy)).error).toBeUndefined();
      expect((await refusal('https://[fc00::1]/', policy)).error).toBeInstanceOf(EgressRefused);
    });

    it('ignores entries that do not parse', async () => {
      const policy = { allowlist: ['not a host', '10.0.0.0/99', '*.example'] };

      expect((await refusal('https://10.0.0.1/', policy)).error).toBeInstanceOf(EgressRefused);
    });
  });
});
