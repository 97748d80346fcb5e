/**
 * Cross-origin policy, decided per route. Browsers never hold an API key (they hold call tokens minted server-side),
 * so every route that takes only an API key is closed: no Access-Control-Allow-Origin, and a preflight is answered
 * without allowing anything. Only the browser-facing routes below are open, to the origins of
 * CORS_ALLOWED_ORIGINS, or to any origin while that is empty: the browser client script (public and sent without
 * credentials, like a file on a CDN) and an operator console's routes (a console token as bearer, never cookies, so
 * no credentials mode either).
 */
const BROWSER_ROUTES: { path: RegExp; methods: string[]; headers?: string }[] = [
  // …and every path under it (`/v1/embed/parley.mjs`, `/v1/embed/{build}/parley.js`): a module script is always
  // fetched with CORS, so the ES module loads from another origin only with these headers.
  { path: /^\/v1\/embed(\/.*)?$/, methods: ['GET', 'HEAD'] },
  { path: /^\/v1\/calls\/ringing$/, methods: ['GET'], headers: 'authorization, content-type' },
  { path: /^\/v1\/calls\/[^/]+\/claim$/, methods: ['POST'], headers: 'authorization, content-type' },
  { path: /^\/v1\/realtime\/tokens\/refresh$/, methods: ['POST'], headers: 'authorization, content-type' },
];

/** Response headers a page's script may read (browsers hide all but a few otherwise). */
const EXPOSED = 'X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After';

/** How long a browser may reuse an allowing preflight, in seconds. */
const PREFLIGHT_MAX_AGE = '600';

export interface CorsRequest {
  method: string;
  url: string;
  origin?: string;
  /** Access-Control-Request-Method of a preflight. */
  requestedMethod?: string;
}

export interface CorsDecision {
  /** A preflight: the gateway answers it itself with 204 and these headers. */
  preflight: boolean;
  headers: Record<string, string>;
}

/** Parses CORS_ALLOWED_ORIGINS (validated at boot): comma-separated origins, empty for any origin. */
export function parseAllowedOrigins(value: string): string[] {
  return value
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
}

function browserRoute(url: string) {
  // Trailing slashes are not significant to the router (GET /v1/embed/ is the contract's spelling).
  const path = url.split('?')[0].replace(/\/+$/, '');
  return BROWSER_ROUTES.find((r) => r.path.test(path));
}

export function decideCors(request: CorsRequest, allowedOrigins: readonly string[]): CorsDecision {
  const preflight = request.method === 'OPTIONS' && request.origin !== undefined && request.requestedMethod !== undefined;
  const route = browserRoute(request.url);
  if (!route || request.origin === undefined) return { preflight, headers: {} };
  const anyOrigin = allowedOrigins.length === 0;
  // A listed origin is echoed, so caches must key on Origin; `*` is the same answer for everyone.
  const vary: Record<string, string> = anyOrigin ? {} : { vary: 'Origin' };
  if (!anyOrigin && !allowedOrigins.includes(request.origin)) return { preflight, headers: vary };
  if (preflight && !route.methods.includes(request.requestedMethod!.toUpperCase())) return { preflight, headers: vary };
  const allow = { 'access-control-allow-origin': anyOrigin ? '*' : request.origin, ...vary };
  return {
    preflight,
    headers: preflight
      ? {
          ...allow,
          'access-control-allow-methods': route.methods.join(', '),
          ...(route.headers ? { 'access-control-allow-headers': route.headers } : {}),
          'access-control-max-age': PREFLIGHT_MAX_AGE,
        }
      : { ...allow, 'access-control-expose-headers': EXPOSED },
  };
}
