export { allowlistNamesHost, EgressRefused, parseEgressAllowlist } from './egress-policy';
export type { EgressPolicy } from './egress-policy';
export { checkEgressUrl } from './check-egress-url';
export type { CheckEgressUrlOptions, Resolver } from './check-egress-url';
export { createEgressDispatcher, safeFetch, safeRequest } from './safe-fetch';
export type { EgressDispatcherOptions, SafeFetchOptions, SafeRequestOptions, SafeRequestResult } from './safe-fetch';
export { httpAllowed, parseHttpHosts, webhookUrlProblem } from './webhook-url';
export type { WebhookUrlRules } from './webhook-url';
