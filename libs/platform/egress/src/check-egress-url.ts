import { lookup } from 'node:dns/promises';
import { parseAddress } from './addresses';
import { compilePolicy, CompiledPolicy, EgressPolicy, EgressRefused, normalizeHostName } from './egress-policy';

/** Resolves a host name to every address it has (what a connection to it could reach). */
export type Resolver = (host: string) => Promise<string[]>;

/** The system resolver (getaddrinfo, as connections use), every address of either family. */
export const systemResolver: Resolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

export interface CheckEgressUrlOptions {
  /** Accept http: as well as https: (internal development receivers). */
  allowHttp?: boolean;
  /** How host names are resolved; the system resolver by default. */
  resolve?: Resolver;
}

function isLocalhostName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

/**
 * Why a connection to `host` (a name, as the caller gave it) at `addresses` is refused, or undefined. A listed
 * host name passes whatever it resolves to; otherwise every address must be public or allow-listed.
 */
export function resolvedAddressesRefusal(
  host: string,
  addresses: string[],
  policy: CompiledPolicy,
): string | undefined {
  const name = normalizeHostName(host);
  if (policy.allowsHost(name)) return undefined;
  if (addresses.length === 0) return `"${name}" resolves to no address`;
  for (const text of addresses) {
    const address = parseAddress(text);
    if (!address) return `"${name}" resolves to "${text}", which is not an IP address`;
    const refusal = policy.addressRefusal(address);
    if (refusal) return `"${name}" resolves to ${address.toString()}, ${refusal}`;
  }
  return undefined;
}

/** Why a literal address in a URL (brackets allowed) is refused, or undefined. */
export function literalAddressRefusal(host: string, policy: CompiledPolicy): string | undefined {
  const address = parseAddress(host);
  if (!address) return undefined;
  const refusal = policy.addressRefusal(address);
  return refusal && `${address.toString()} is ${refusal}`;
}

/**
 * Registration-time check of a URL the platform will call on a customer's behalf: https only (http too with
 * `allowHttp`), no credentials in the URL, and a host that is neither a forbidden address nor a name that
 * resolves to one (localhost names are refused without asking DNS). The host is read by the WHATWG URL parser,
 * which already turns decimal, octal, hex and short IPv4 spellings (2130706433, 0177.0.0.1, 0x7f.1, 127.1) into
 * dotted quads; the connection is later made to what the same parser produced, so both see one address.
 * Throws EgressRefused with a reason a person can act on.
 */
export async function checkEgressUrl(
  url: string,
  policy: EgressPolicy,
  options: CheckEgressUrlOptions = {},
): Promise<void> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new EgressRefused('not a valid absolute URL');
  }
  const schemes = options.allowHttp ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(parsed.protocol)) {
    throw new EgressRefused(`the scheme must be ${schemes.map((s) => s.slice(0, -1)).join(' or ')}`);
  }
  if (parsed.username || parsed.password) throw new EgressRefused('credentials in the URL are not allowed');

  const compiled = compilePolicy(policy);
  const host = normalizeHostName(parsed.hostname);
  if (!host) throw new EgressRefused('the URL has no host');
  if (parseAddress(host)) {
    const refusal = literalAddressRefusal(host, compiled);
    if (refusal) throw new EgressRefused(refusal);
    return;
  }
  if (compiled.allowsHost(host)) return;
  if (isLocalhostName(host)) throw new EgressRefused(`"${host}" is a loopback name`);

  let addresses: string[];
  try {
    addresses = await (options.resolve ?? systemResolver)(host);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    throw new EgressRefused(`"${host}" could not be resolved${typeof code === 'string' ? ` (${code})` : ''}`, {
      cause: err,
    });
  }
  const refusal = resolvedAddressesRefusal(host, addresses, compiled);
  if (refusal) throw new EgressRefused(refusal);
}
