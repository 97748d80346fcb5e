import { allowlistNamesHost, EgressRefused, safeFetch } from '@parley/egress';
import { ToolOutcome, ToolRuntime } from './types';

/** The most of a response body handed to the model. */
export const MAX_RESULT_BYTES = 4096;
export const DEFAULT_TIMEOUT_SECONDS = 8;

export interface ToolHttpRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
  /** Accept http: regardless of INTERNAL_HOSTS (deployment-declared URLs). */
  allowHttp?: boolean;
}

/** 1-30 s, default 8 (the spec's limits), in milliseconds. */
export function toolTimeoutMs(seconds: number | undefined): number {
  const s = Number.isFinite(seconds) && seconds ? Math.min(30, Math.max(1, Math.round(seconds as number))) : DEFAULT_TIMEOUT_SECONDS;
  return s * 1000;
}

/** http is accepted for INTERNAL_HOSTS and for hosts the allowlist names exactly; https everywhere. */
export function httpAllowed(url: string, rt: Pick<ToolRuntime, 'internalHosts' | 'egress'>): boolean {
  if (allowlistNamesHost(url, rt.egress)) return true;
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
    return rt.internalHosts.some((h) => h.toLowerCase() === host);
  } catch {
    return false;
  }
}

type Failure = 'refused' | 'timeout' | 'aborted' | 'network';

const FAILURE_TEXT: Record<Failure, string> = {
  refused: 'The tool call failed: the service could not be reached.',
  network: 'The tool call failed: the service could not be reached.',
  timeout: 'The tool call failed: the service did not answer in time.',
  aborted: 'The tool call was cancelled.',
};

/** A request that got an answer: its status and (capped) body; or the outcome of one that did not. */
export type ToolExchange = { status: number; text: string; truncated: boolean } | { failed: ToolOutcome };

/**
 * One request of a tool, through the outbound-request guard (safeFetch with EGRESS_ALLOWLIST): redirects are not
 * followed (a redirect would carry the secret headers elsewhere; it reads as a non-2xx status), the deadline
 * runs on the engine's clock (and on the real one as a backstop), barge-in aborts it. Gives back the status and
 * the body cut at `maxBytes` (a non-2xx body only with `readErrorBody`); what went wrong inside the deployment
 * (an address refused, a DNS error) goes to the log only, the failure's outcome says only that the service failed
 * or was slow.
 */
export async function toolExchange(
  request: ToolHttpRequest,
  rt: ToolRuntime,
  options: { maxBytes?: number; readErrorBody?: boolean } = {},
): Promise<ToolExchange> {
  const deadline = new AbortController();
  const timer = rt.clock.setTimeout(() => deadline.abort(new DOMException('tool deadline', 'TimeoutError')), request.timeoutMs);
  const signal = AbortSignal.any([rt.signal, deadline.signal]);
  try {
    const response = await safeFetch(
      request.url,
      {
        method: request.method,
        headers: request.headers,
        body: request.body,
        signal,
        timeoutMs: request.timeoutMs,
        redirect: 'manual',
        allowHttp: request.allowHttp || httpAllowed(request.url, rt),
        resolve: rt.resolve,
        lookup: rt.lookup,
      },
      rt.egress,
    );
    const success = response.status >= 200 && response.status < 300;
    if (!success && !options.readErrorBody) {
      await response.body?.cancel().catch(() => undefined);
      return { status: response.status, text: '', truncated: false };
    }
    const { text, truncated } = await readCapped(response, options.maxBytes ?? MAX_RESULT_BYTES);
    return { status: response.status, text, truncated };
  } catch (error) {
    const failure: Failure = rt.signal.aborted
      ? 'aborted'
      : deadline.signal.aborted || (error as Error)?.name === 'TimeoutError'
        ? 'timeout'
        : error instanceof EgressRefused
          ? 'refused'
          : 'network';
    rt.log?.('tool request failed', { failure, err: error instanceof EgressRefused ? error.reason : String((error as Error)?.message ?? error) });
    const report = { refused: 'refused by the outbound request guard', timeout: `no answer within ${request.timeoutMs / 1000} s`, aborted: 'interrupted', network: 'network error' }[failure];
    return { failed: { ok: false, result: FAILURE_TEXT[failure], error: report } };
  } finally {
    rt.clock.clearTimeout(timer);
  }
}

/**
 * One request of a tool (toolExchange). The answer the model gets: a 2xx body as text, cut at MAX_RESULT_BYTES;
 * otherwise the status, or that the service failed or was slow.
 */
export async function toolFetch(request: ToolHttpRequest, rt: ToolRuntime): Promise<ToolOutcome> {
  const exchange = await toolExchange(request, rt);
  if ('failed' in exchange) return exchange.failed;
  const { status, text, truncated } = exchange;
  if (status < 200 || status >= 300) {
    return { ok: false, result: `The tool call failed: the service answered with HTTP status ${status}.`, error: `HTTP ${status}` };
  }
  if (!text) return { ok: true, result: `Done (HTTP ${status}, no content).` };
  return { ok: true, result: truncated ? `${text} …(truncated)` : text };
}

/** Reads at most `limit` bytes of the body as UTF-8 and cancels the rest. */
async function readCapped(response: Response, limit: number): Promise<{ text: string; truncated: boolean }> {
  const reader = response.body?.getReader();
  if (!reader) return { text: '', truncated: false };
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size > limit) {
      truncated = true;
      await reader.cancel().catch(() => undefined);
      break;
    }
  }
  const bytes = Buffer.concat(chunks).subarray(0, limit);
  let text = new TextDecoder('utf-8').decode(bytes);
  // A multi-byte character cut in half decodes to U+FFFD: drop it.
  if (truncated) text = text.replace(/\uFFFD+$/, '');
  return { text: text.trim(), truncated };
}
