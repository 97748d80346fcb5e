import { allowlistNamesHost, EgressPolicy, EgressRefused, safeFetch } from '@parley/egress';
import { ALIASES_FOR_FETCH, baseContentType, DOCX, PDF, SUPPORTED_CONTENT_TYPES } from './extract';
import { describeError, IngestError } from './ingest-error';
import { DocumentInput } from './types';

export interface FetchDocumentOptions {
  /** EGRESS_ALLOWLIST: what the outbound-request guard lets through besides public addresses. */
  egress: EgressPolicy;
  /** Aborts the fetch; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Most bytes of body read; a larger document is `too_large`. */
  maxBytes: number;
  /** Deadline of the whole fetch, redirects and body included (default 10 000 ms). */
  timeoutMs?: number;
  /**
   * Accept http: URLs. By default only https is fetched, and plain http only from a host the egress allowlist
   * names exactly (development and tests, as tools' requests do).
   */
  allowHttp?: boolean;
}

export const DEFAULT_FETCH_TIMEOUT_MS = 10_000;
const MAX_REDIRECTS = 3;

/** What a body that named no content type (or a generic one) looks like from its first bytes. */
function sniff(head: Buffer): string {
  if (head.subarray(0, 5).toString('latin1') === '%PDF-') return PDF;
  if (head[0] === 0x50 && head[1] === 0x4b) return DOCX;
  const start = head.subarray(0, 512).toString('utf8').trimStart().toLowerCase();
  if (start.startsWith('<!doctype html') || start.startsWith('<html') || /<(head|body|title)[\s>]/.test(start)) return 'text/html';
  return 'text/plain';
}

async function readCapped(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<Buffer> {
  if (!body) return Buffer.alloc(0);
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(maxBytes);
    }
    parts.push(value);
  }
  return Buffer.concat(parts);
}

const tooLarge = (maxBytes: number) =>
  new IngestError('too_large', `the document at the URL is larger than the limit of ${maxBytes.toLocaleString('en-US')} bytes`);

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(1))} s`;

/**
 * Fetches a document's URL through the outbound-request guard (safeFetch: the host checked against the egress
 * policy when resolved and again when connecting; at most 3 redirects, each target checked like the first), within
 * a deadline and a byte limit (the body is streamed and dropped past `maxBytes`). The content type decides: HTML
 * pages come back as `html` (with the final URL), PDF, DOCX, text, markdown and CSV as `file`; a missing or
 * generic content type is decided from the first bytes. Failures are IngestError: `fetch_failed` (refused,
 * unreachable, too slow, an HTTP error status), `too_large`, `unsupported_type`.
 */
export async function fetchDocument(url: string, options: FetchDocumentOptions): Promise<DocumentInput> {
  const { egress, signal: callerSignal, maxBytes, timeoutMs = DEFAULT_FETCH_TIMEOUT_MS } = options;
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = callerSignal ? AbortSignal.any([callerSignal, deadline]) : deadline;
  try {
    const response = await safeFetch(
      url,
      {
        method: 'GET',
        headers: {
          accept: 'text/html, application/xhtml+xml, application/pdf, text/markdown, text/plain, text/csv, */*;q=0.5',
          'user-agent': 'Parley-Knowledge/1.0 (document ingestion)',
        },
        signal,
        timeoutMs,
        maxRedirects: MAX_REDIRECTS,
        allowHttp: options.allowHttp ?? allowlistNamesHost(url, egress),
      },
      egress,
    );
    if (response.status < 200 || response.status >= 300) {
      await response.body?.cancel().catch(() => undefined);
      const redirect = response.status >= 300 && response.status < 400;
      throw new IngestError('fetch_failed', redirect ? `the URL answered HTTP ${response.status} without a usable Location` : `the URL answered HTTP ${response.status}`);
    }
    const declared = Number(response.headers.get('content-length'));
    if (Number.isFinite(declared) && declared > maxBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw tooLarge(maxBytes);
    }
    const header = response.headers.get('content-type') ?? '';
    const data = await readCapped(response.body as ReadableStream<Uint8Array> | null, maxBytes);
    let type = baseContentType(header);
    type = ALIASES_FOR_FETCH[type] ?? type;
    if (!type || type === 'application/octet-stream' || type === 'binary/octet-stream') type = sniff(data);
    if (type === 'text/html') {
      const charset = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(header)?.[1] ?? 'utf-8';
      let html: string;
      try {
        html = new TextDecoder(charset).decode(data);
      } catch {
        html = new TextDecoder('utf-8').decode(data);
      }
      return { kind: 'html', html, url: response.url || url };
    }
    if ((SUPPORTED_CONTENT_TYPES as readonly string[]).includes(type)) {
      return { kind: 'file', data, contentType: type === baseContentType(header) ? header : type };
    }
    throw new IngestError(
      'unsupported_type',
      `the URL answered with "${header || type}", which is not a supported document type; supported: ${SUPPORTED_CONTENT_TYPES.join(', ')}`,
    );
  } catch (error) {
    if (error instanceof IngestError) throw error;
    if (callerSignal?.aborted) throw callerSignal.reason;
    if (deadline.aborted || (error as Error)?.name === 'TimeoutError') {
      throw new IngestError('fetch_failed', `the URL did not answer within ${seconds(timeoutMs)}`, { cause: error });
    }
    if (error instanceof EgressRefused) {
      const reason = /^more than \d+ redirect/.test(error.reason)
        ? `the URL redirected more than ${MAX_REDIRECTS} times`
        : `the URL was refused by the outbound request guard: ${error.reason}`;
      throw new IngestError('fetch_failed', reason, { cause: error });
    }
    const cause = (error as Error & { cause?: { code?: unknown; message?: unknown } })?.cause;
    const detail = typeof cause?.code === 'string' ? cause.code : cause ? describeError(cause) : describeError(error);
    throw new IngestError('fetch_failed', `the URL could not be fetched (${detail})`, { cause: error });
  }
}
