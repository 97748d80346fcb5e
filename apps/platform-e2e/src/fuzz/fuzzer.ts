import fc from 'fast-check';
import { OpenApiDocument, Operation, operationsOf } from './openapi';
import { FailureClass, violations } from './oracle';
import { FuzzCase, fuzzCase, FuzzContext } from './requests';
import { Sender } from './send';

/** One distinct failure: a class of property broken by one operation with one status and code. */
export interface Failure {
  klass: FailureClass;
  method: string;
  template: string;
  status?: number;
  code?: string;
  detail: string;
  /** The smallest request fast-check shrank it to. */
  reproduction: FuzzCase;
}

export interface FuzzReport {
  seed: number;
  requests: number;
  statuses: Record<string, number>;
  failures: Failure[];
}

export interface FuzzOptions {
  baseUrl: string;
  seed: number;
  seconds: number;
  context: FuzzContext;
}

export const failureKey = (f: Pick<Failure, 'klass' | 'method' | 'template' | 'status' | 'code'>) =>
  `${f.klass} ${f.method} ${f.template} ${f.status ?? '-'} ${f.code ?? '-'}`;

/**
 * Sends generated requests until the time is up. Each fast-check run stops at the first failure not seen before,
 * shrinks it to a minimal request and records it; the next run (seed + 1) goes on, so one run finds every distinct
 * failure rather than the first. A fixed seed gives the same requests in the same order.
 */
export async function fuzz(doc: OpenApiDocument, options: FuzzOptions): Promise<FuzzReport> {
  const operations = operationsOf(doc);
  const byRoute = new Map<string, Operation>(operations.map((op) => [`${op.method} ${op.template}`, op]));
  const sender = new Sender(options.baseUrl);
  const found = new Map<string, Failure>();
  const statuses: Record<string, number> = {};
  let requests = 0;
  const deadline = Date.now() + options.seconds * 1000;
  const cases = fuzzCase(doc, operations, options.context);

  for (let run = 0; Date.now() < deadline; run++) {
    let last: Failure[] = [];
    const property = fc.asyncProperty(cases, async (c) => {
      const observed = await sender.send(c);
      requests++;
      const status = observed.status === undefined ? 'none' : String(observed.status);
      statuses[status] = (statuses[status] ?? 0) + 1;
      const fresh = violations(observed, byRoute.get(`${c.method} ${c.template}`))
        .map((v) => ({ ...v, method: c.method, template: c.template, reproduction: c }))
        .filter((f) => !found.has(failureKey(f)));
      if (fresh.length) last = fresh;
      return fresh.length === 0;
    });
    const result = await fc.check(property, {
      seed: options.seed + run,
      numRuns: Number.MAX_SAFE_INTEGER,
      plugins: [fc.interruptAfterTimeLimit(Math.max(0, deadline - Date.now()))],
    });
    // The last failing run fast-check saw is the end of its shrinking: the minimal request.
    if (result.failed) for (const f of last) found.set(failureKey(f), f);
    else break;
  }
  return { seed: options.seed, requests, statuses, failures: [...found.values()] };
}

/** A request as text short enough to read: long paths and bodies cut, with their size and the generator's note. */
export function describeCase(c: FuzzCase): string {
  const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text);
  if (c.kind === 'raw') return `raw socket (${c.note}): ${JSON.stringify(cut(c.text, 300))}`;
  const headers = Object.entries(c.headers)
    .map(([k, v]) => `${k}: ${cut(v, 80)}`)
    .join(' | ');
  const body = c.body ? ` body (${c.note}, ${c.body.length} bytes): ${JSON.stringify(cut(c.body.toString('utf8'), 300))}` : '';
  return `${c.method} ${cut(c.target, 300)} [${headers}]${body}`;
}

export function formatReport(report: FuzzReport, isKnown: (f: Failure) => boolean): string {
  const lines = [
    `fuzz: seed ${report.seed}, ${report.requests} requests sent; statuses ${JSON.stringify(report.statuses)}`,
    `fuzz: ${report.failures.length} distinct failure(s)${report.failures.length ? ':' : ''}`,
  ];
  const byClass = new Map<string, Failure[]>();
  for (const f of report.failures) byClass.set(f.klass, [...(byClass.get(f.klass) ?? []), f]);
  for (const [klass, failures] of byClass) {
    lines.push(`  ${klass} (${failures.length})`);
    for (const f of failures) {
      lines.push(`    ${isKnown(f) ? '[known gap]' : '[NEW]'} ${f.method} ${f.template} → ${f.status ?? 'no answer'} ${f.code ?? ''}: ${f.detail.slice(0, 200)}`);
      lines.push(`      reproduce: ${describeCase(f.reproduction)}`);
    }
  }
  return lines.join('\n');
}
