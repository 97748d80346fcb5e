import { isIP } from 'node:net';
import { addressInRange, forbiddenAddressReason, IpAddress, parseAddress } from './addresses';

/**
 * What the outbound-request guard lets through besides public addresses. `allowlist` holds host names (matched
 * exactly, case-insensitively, without a trailing dot), IP addresses and CIDR ranges (IPv4 and IPv6); it comes
 * from EGRESS_ALLOWLIST and exists for development and tests (a webhook receiver on 127.0.0.1).
 */
export interface EgressPolicy {
  allowlist: string[];
}

/** The request was not sent: its target is one the platform must not reach on a customer's behalf. */
export class EgressRefused extends Error {
  override readonly name = 'EgressRefused';

  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Outbound request refused: ${reason}`, options);
  }
}

const HOST_LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;
const NUMERIC_LABEL = /^(0x[0-9a-f]*|[0-9]+)$/;

type Entry = { host: string } | { range: [IpAddress, number] };

/** One allowlist entry, or why it is not one. Config (libs/platform/config) repeats these rules. */
function parseEntry(raw: string): Entry | string {
  if (raw.includes('://')) return 'is a URL; give only the host';
  if (raw.includes('/')) {
    const slash = raw.lastIndexOf('/');
    const address = parseAddress(raw.slice(0, slash));
    const bits = raw.slice(slash + 1);
    const max = address?.kind() === 'ipv4' ? 32 : 128;
    if (!address || !/^\d{1,3}$/.test(bits) || Number(bits) > max) {
      return 'is not a valid CIDR range (address/prefix length)';
    }
    return { range: [address, Number(bits)] };
  }
  const address = parseAddress(raw);
  if (address) return { range: [address, address.kind() === 'ipv4' ? 32 : 128] };
  if (raw.includes('*')) return 'has a wildcard; list each host';
  if (raw.includes('%') && isIP(raw.replace(/^\[|\]$/g, ''))) return 'has an IPv6 zone id, which is not supported';
  if (raw.includes(':')) return 'has a port or scheme; give only the host';
  const host = normalizeHostName(raw);
  const labels = host.split('.');
  if (host.length > 253 || !labels.every((label) => HOST_LABEL.test(label))) {
    return 'is not a host name, IP address or CIDR range';
  }
  if (NUMERIC_LABEL.test(labels[labels.length - 1])) {
    return 'is a numeric address spelling; write IPv4 addresses as four decimal numbers (127.0.0.1)';
  }
  return { host };
}

/** Lower case, without trailing dots: the form in which host names are compared. */
export function normalizeHostName(host: string): string {
  return host.toLowerCase().replace(/\.+$/, '');
}

/**
 * Whether the allowlist names the URL's host exactly (the host name, or its one address as /32 or /128): where plain
 * http is accepted besides https (development and tests).
 */
export function allowlistNamesHost(url: string, policy: EgressPolicy): boolean {
  try {
    const host = normalizeHostName(new URL(url).hostname.replace(/^\[|\]$/g, ''));
    return policy.allowlist.some((entry) => entry === host || entry === `${host}/32` || entry === `${host}/128`);
  } catch {
    return false;
  }
}

/** Parses EGRESS_ALLOWLIST (comma separated); problems are returned, not thrown, so config lists them all. */
export function parseEgressAllowlist(value: string): { policy: EgressPolicy; problems: string[] } {
  const allowlist: string[] = [];
  const problems: string[] = [];
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .forEach((raw, i) => {
      const entry = parseEntry(raw);
      if (typeof entry === 'string') problems.push(`entry ${i + 1} ("${raw}") ${entry}`);
      else if ('host' in entry) allowlist.push(entry.host);
      else allowlist.push(`${entry.range[0].toString()}/${entry.range[1]}`);
    });
  return { policy: { allowlist }, problems };
}

/** A policy in the form the guard consults; entries that do not parse are ignored (config refuses them). */
export class CompiledPolicy {
  private readonly hosts = new Set<string>();
  private readonly ranges: Array<[IpAddress, number]> = [];

  constructor(policy: EgressPolicy) {
    for (const raw of policy.allowlist) {
      const entry = parseEntry(raw.trim());
      if (typeof entry === 'string') continue;
      if ('host' in entry) this.hosts.add(entry.host);
      else this.ranges.push(entry.range);
    }
  }

  /** Whether a host name is listed (the caller normalises it with normalizeHostName). */
  allowsHost(host: string): boolean {
    return this.hosts.has(host);
  }

  /** Why an address is refused, or undefined when it is public or allow-listed. */
  addressRefusal(address: IpAddress): string | undefined {
    const reason = forbiddenAddressReason(address);
    if (!reason || this.ranges.some((range) => addressInRange(address, range))) return undefined;
    return reason;
  }
}

const compiled = new WeakMap<string[], { source: string; policy: CompiledPolicy }>();

/** Compiles a policy once per allowlist array (again if the array's contents change). */
export function compilePolicy(policy: EgressPolicy): CompiledPolicy {
  const source = policy.allowlist.join(',');
  const cached = compiled.get(policy.allowlist);
  if (cached && cached.source === source) return cached.policy;
  const fresh = new CompiledPolicy(policy);
  compiled.set(policy.allowlist, { source, policy: fresh });
  return fresh;
}
