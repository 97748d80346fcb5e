import { checkEgressUrl, Resolver } from './check-egress-url';
import { EgressPolicy, EgressRefused } from './egress-policy';

/**
 * What a URL webhooks are delivered to (a webhook endpoint's, an agent's or a group's `webhook_url`) is checked
 * against: the deployment's exceptions, both off by default.
 */
export interface WebhookUrlRules {
  /** EGRESS_ALLOWLIST: hosts, addresses and ranges exempt from the address rules (never from https). */
  egress: EgressPolicy;
  /** WEBHOOK_ALLOW_HTTP_HOSTS: hosts that may be called over plain http (development receivers). */
  httpHosts: readonly string[];
  /** How names are resolved; the system resolver by default. */
  resolve?: Resolver;
}

/** Parses WEBHOOK_ALLOW_HTTP_HOSTS (comma separated; config validated the entries). */
export function parseHttpHosts(value: string): string[] {
  return value
    .split(',')
    .map((h) => h.trim().toLowerCase().replace(/^\[|\]$/g, ''))
    .filter(Boolean);
}

/** Plain http only towards a host WEBHOOK_ALLOW_HTTP_HOSTS names exactly; EGRESS_ALLOWLIST has no say in it. */
export function httpAllowed(url: string, httpHosts: readonly string[]): boolean {
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.+$/, '');
    return httpHosts.includes(host);
  } catch {
    return false;
  }
}

/**
 * Why a webhook URL is refused (a field problem's message), or undefined: https only (http to
 * WEBHOOK_ALLOW_HTTP_HOSTS), no credentials, and no private, loopback, link-local, metadata or otherwise internal
 * target, spelled or resolved, unless EGRESS_ALLOWLIST exempts it. The one check of webhook endpoints and of
 * agents' and groups' `webhook_url`.
 */
export async function webhookUrlProblem(url: string, rules: WebhookUrlRules): Promise<string | undefined> {
  try {
    await checkEgressUrl(url, rules.egress, { allowHttp: httpAllowed(url, rules.httpHosts), resolve: rules.resolve });
    return undefined;
  } catch (error) {
    if (!(error instanceof EgressRefused)) throw error;
    const hint = url.startsWith('http:') ? ' (plain http only to the hosts WEBHOOK_ALLOW_HTTP_HOSTS lists, for development)' : '';
    return `is refused: ${error.reason}${hint}`;
  }
}
