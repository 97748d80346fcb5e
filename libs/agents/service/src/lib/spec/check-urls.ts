import { FieldProblem } from '@parley/contracts';
import { checkEgressUrl, EgressPolicy, EgressRefused, Resolver, webhookUrlProblem } from '@parley/egress';
import { AgentSpec } from './agent-spec';

/** What a URL the platform will call for an agent is checked against: the deployment's exceptions. */
export interface UrlRules {
  /** EGRESS_ALLOWLIST: hosts, addresses and ranges exempt from the address rules. */
  egress: EgressPolicy;
  /** INTERNAL_HOSTS: hosts tool requests may reach over plain http. */
  internalHosts: readonly string[];
  /** WEBHOOK_ALLOW_HTTP_HOSTS: hosts a `webhook_url` may name over plain http, as webhook endpoints may (development). */
  webhookHttpHosts: readonly string[];
  /** How names are resolved; the system resolver by default. */
  resolve?: Resolver;
}

interface UrlField {
  field: string;
  url: string;
  /** Tool requests may use http towards INTERNAL_HOSTS; webhook_url is delivered as a webhook, checked as endpoints are. */
  tool: boolean;
}

const PLACEHOLDER = /\{\{\s*[A-Za-z0-9_-]+\s*\}\}/g;

/** Every URL the platform would call for this (partial) agent or group defaults, with its field path. */
export function urlFields(spec: Partial<AgentSpec>, prefix = ''): UrlField[] {
  const fields: UrlField[] = [];
  if (spec.webhook_url) fields.push({ field: `${prefix}webhook_url`, url: spec.webhook_url, tool: false });
  spec.tool_configs?.forEach((tc, i) => {
    const at = `${prefix}tool_configs[${i}]`;
    if (tc.transfer?.webhook_url) fields.push({ field: `${at}.transfer.webhook_url`, url: tc.transfer.webhook_url, tool: true });
    if (tc.request?.url) fields.push({ field: `${at}.request.url`, url: tc.request.url, tool: true });
  });
  return fields;
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * The registration-time check of webhook endpoints (@parley/egress) applied to every URL field: a `webhook_url` is
 * an endpoint's URL (webhookUrlProblem: http only to WEBHOOK_ALLOW_HTTP_HOSTS); a tool request is https, or http to
 * INTERNAL_HOSTS; neither carries credentials nor names a private, loopback, link-local, metadata or otherwise
 * internal target, spelled or resolved; EGRESS_ALLOWLIST exempts from the address rules. `{{placeholders}}` are
 * checked as if filled with a letter. All fields are checked at once; one problem per refused field.
 */
export async function checkUrlFields(fields: UrlField[], rules: UrlRules): Promise<FieldProblem[]> {
  const internal = rules.internalHosts.map((h) => h.toLowerCase());
  const webhookRules = { egress: rules.egress, httpHosts: rules.webhookHttpHosts, resolve: rules.resolve };
  const problems = await Promise.all(
    fields.map(async ({ field, url, tool }): Promise<FieldProblem | undefined> => {
      const concrete = url.replace(PLACEHOLDER, 'x');
      if (!tool) {
        const message = await webhookUrlProblem(concrete, webhookRules);
        return message ? { field, message } : undefined;
      }
      const host = hostOf(concrete);
      const allowHttp = host !== undefined && internal.includes(host);
      try {
        await checkEgressUrl(concrete, rules.egress, { allowHttp, resolve: rules.resolve });
        return undefined;
      } catch (error) {
        if (!(error instanceof EgressRefused)) throw error;
        const hint = host !== undefined && concrete.startsWith('http:') && !allowHttp ? ` (http only to INTERNAL_HOSTS: ${internal.join(', ') || 'none configured'})` : '';
        return { field, message: `is refused: ${error.reason}${hint}` };
      }
    }),
  );
  return problems.filter((p): p is FieldProblem => p !== undefined);
}
