export { EgressRefused, parseEgressAllowlist } from './egress-policy';
export type { EgressPolicy } from './egress-policy';
export { checkEgressUrl } from './check-egress-url';
export type { CheckEgressUrlOptions, Resolver } from './check-egress-url';
export { createEgressDispatcher, safeFetch } from './safe-fetch';
export type { EgressDispatcherOptions, SafeFetchOptions } from './safe-fetch';
