import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * Parses one IP address written the canonical way (dotted-quad IPv4, or IPv6 optionally in brackets). Odd IPv4
 * spellings (octal, hex, decimal, short forms) are not addresses here: in URLs the WHATWG parser has already
 * turned them into dotted quads, and DNS answers never use them.
 */
export function parseAddress(text: string): IpAddress | undefined {
  const bracketed = text.startsWith('[') && text.endsWith(']');
  const bare = bracketed ? text.slice(1, -1) : text;
  const family = bare.includes('%') ? 0 : isIP(bare);
  if (family === 0 || (bracketed && family !== 6)) return undefined;
  return ipaddr.parse(bare);
}

const IPV4_REASONS: Record<string, string> = {
  unspecified: 'an unspecified address (0.0.0.0/8)',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT address (100.64.0.0/10)',
  private: 'a private address',
  as112: 'a special-purpose address (AS112)',
  amt: 'a special-purpose address (AMT)',
};

/** ipaddr.js files these under `reserved`; named here so a refusal says which. */
const IPV4_RESERVED: Array<[string, string]> = [
  ['192.0.2.0/24', 'a documentation address'],
  ['198.51.100.0/24', 'a documentation address'],
  ['203.0.113.0/24', 'a documentation address'],
  ['198.18.0.0/15', 'a benchmarking address (198.18.0.0/15)'],
  ['192.0.0.0/24', 'an IETF protocol assignment address (192.0.0.0/24)'],
  ['192.88.99.0/24', 'a 6to4 relay anycast address'],
  ['240.0.0.0/4', 'a reserved address (240.0.0.0/4)'],
];

const IPV6_REASONS: Record<string, string> = {
  unspecified: 'the unspecified address (::)',
  loopback: 'a loopback address',
  linkLocal: 'a link-local address (fe80::/10)',
  uniqueLocal: 'a unique-local address (fc00::/7)',
  multicast: 'a multicast address',
  deprecatedSiteLocal: 'a site-local address (fec0::/10)',
  teredo: 'a Teredo tunnel address',
  benchmarking: 'a benchmarking address',
  discard: 'a discard-only address',
};

const IPV6_DOCUMENTATION = [ipaddr.IPv6.parseCIDR('2001:db8::/32'), ipaddr.IPv6.parseCIDR('3fff::/20')];
const IPV6_GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');
const IPV6_IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR('::/96');
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

function ipv4FromParts(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

function ipv4Reason(address: ipaddr.IPv4): string | undefined {
  const range = address.range() as string;
  if (range === 'unicast') return undefined;
  if (range === 'linkLocal' && address.toString() === '169.254.169.254') {
    return 'the cloud metadata address (link-local)';
  }
  if (range === 'reserved') {
    const named = IPV4_RESERVED.find(([cidr]) => address.match(ipaddr.IPv4.parseCIDR(cidr)));
    return named?.[1] ?? 'a reserved address';
  }
  return IPV4_REASONS[range] ?? `a special-purpose address (${range})`;
}

/** The IPv4 address an IPv6 address carries, for the forms that carry one at a fixed place. */
function embeddedIpv4(address: ipaddr.IPv6): { form: string; ipv4: ipaddr.IPv4 } | undefined {
  const p = address.parts;
  const range = address.range() as string;
  if (range === 'ipv4Mapped') return { form: 'an IPv4-mapped form', ipv4: ipv4FromParts(p[6], p[7]) };
  if (range === 'rfc6145') return { form: 'an IPv4-translated form', ipv4: ipv4FromParts(p[6], p[7]) };
  if (address.match(NAT64_WELL_KNOWN)) return { form: 'a NAT64 form', ipv4: ipv4FromParts(p[6], p[7]) };
  if (range === '6to4') return { form: 'a 6to4 form', ipv4: ipv4FromParts(p[1], p[2]) };
  return undefined;
}

function ipv6Reason(address: ipaddr.IPv6): string | undefined {
  const range = address.range() as string;
  if (IPV6_REASONS[range]) return IPV6_REASONS[range];
  const embedded = embeddedIpv4(address);
  if (embedded) {
    const inner = ipv4Reason(embedded.ipv4);
    return inner ? `${embedded.form} of ${embedded.ipv4.toString()}, ${inner}` : undefined;
  }
  if (address.match(IPV6_IPV4_COMPATIBLE)) return 'a deprecated IPv4-compatible IPv6 address (::/96)';
  if (range === 'rfc6052') return 'a local-use NAT64 address (64:ff9b:1::/48)';
  if (IPV6_DOCUMENTATION.some((cidr) => address.match(cidr))) return 'a documentation address';
  if (range !== 'unicast' || !address.match(IPV6_GLOBAL_UNICAST)) return `a special-purpose IPv6 address (${range})`;
  return undefined;
}

/**
 * Why an address may not be the target of an outbound request, or undefined when it may (a public unicast
 * address). Deny by default: every range ipaddr.js knows as special is refused, IPv6 outside 2000::/3 too, and
 * IPv6 forms that carry an IPv4 address (mapped, translated, NAT64, 6to4) are judged by that address.
 */
export function forbiddenAddressReason(address: IpAddress): string | undefined {
  return address.kind() === 'ipv4' ? ipv4Reason(address as ipaddr.IPv4) : ipv6Reason(address as ipaddr.IPv6);
}

/** Whether `address` lies in `range` (IPv4-mapped IPv6 addresses compare as their IPv4 address). */
export function addressInRange(address: IpAddress, range: [IpAddress, number]): boolean {
  const plain =
    address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()
      ? (address as ipaddr.IPv6).toIPv4Address()
      : address;
  return plain.kind() === range[0].kind() && plain.match(range);
}
