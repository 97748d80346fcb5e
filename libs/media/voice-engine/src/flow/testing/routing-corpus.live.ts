import { OpenAiCompatibleLlm } from '@parley/llm';
import { ROUTING_CORPUS, RoutingCase } from './routing-corpus';
import { CaseOutcome, expectation, runCase, score } from './route-case';

// The live routing check, run by `npm run check:routing` (bench/routing.mjs) and never by `npm test` (no unit,
// integration or end-to-end tier matches *.live.ts): the corpus through a real OpenAI-compatible model with the
// real provider and modelRouter, as a call's flow routes. Configured as the deployment configures its model:
// LLM_BASE_URL, LLM_API_KEY, and ROUTING_MODEL (else LLM_MODEL, else the deployment's default gpt-4o-mini).
// Prints the hit rate (edge right; edge and values right), by kind of hard case, the routing call's latency and
// every miss with the model's answer. Fails only when no call got an answer (the wiring is wrong) or, with
// ROUTING_MIN_HIT_RATE (0-1), when the edge hit rate is below it.

const baseURL = process.env.LLM_BASE_URL || 'https://api.openai.com/v1';
const apiKey = process.env.LLM_API_KEY || undefined;
const model = process.env.ROUTING_MODEL || process.env.LLM_MODEL || 'gpt-4o-mini';
const configured = Boolean(process.env.LLM_BASE_URL || process.env.LLM_API_KEY);
const concurrency = Math.max(1, Number(process.env.ROUTING_CONCURRENCY) || 4);
const minHitRate = Number(process.env.ROUTING_MIN_HIT_RATE ?? 0);

const print = (line = '') => process.stdout.write(`${line}\n`);
const percent = (n: number, of: number) => `${n}/${of} (${((100 * n) / Math.max(1, of)).toFixed(1)}%)`;
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN;

(configured ? it : it.skip)(
  'routes the corpus with a real model',
  async () => {
    const llm = new OpenAiCompatibleLlm({ name: 'routing-check', baseURL, apiKey, timeoutMs: 30_000, maxRetries: 1 });
    const outcomes: { c: RoutingCase; out: CaseOutcome }[] = [];
    const queue = [...ROUTING_CORPUS];
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let c = queue.shift(); c; c = queue.shift()) outcomes.push({ c, out: await runCase(c, llm, model) });
      }),
    );
    outcomes.sort((a, b) => ROUTING_CORPUS.indexOf(a.c) - ROUTING_CORPUS.indexOf(b.c));

    const scored = outcomes.map(({ c, out }) => ({ c, out, ...score(c, out) }));
    const answered = scored.filter((s) => !s.out.error);
    const edges = scored.filter((s) => s.edge).length;
    const values = scored.filter((s) => s.values).length;
    print();
    print(`routing check: ${ROUTING_CORPUS.length} utterances, model ${model} at ${baseURL}, ${concurrency} at a time`);
    print(`  edge right:            ${percent(edges, scored.length)}`);
    print(`  edge and values right: ${percent(values, scored.length)}`);
    const kinds = [...new Set(ROUTING_CORPUS.flatMap((c) => c.hard ?? []))];
    print(`  hard cases, edge and values right: ${kinds.map((k) => `${k} ${scored.filter((s) => s.c.hard?.includes(k) && s.values).length}/${scored.filter((s) => s.c.hard?.includes(k)).length}`).join(', ')}`);
    const ms = answered.map((s) => s.out.ms);
    print(`  routing call: p50 ${quantile(ms, 0.5).toFixed(0)} ms, p95 ${quantile(ms, 0.95).toFixed(0)} ms; failed calls ${scored.length - answered.length}`);
    const misses = scored.filter((s) => !s.values);
    if (misses.length) print(`  misses (${misses.length}):`);
    for (const s of misses) {
      print(`    ${s.c.id}: "${s.c.said}"`);
      print(`      expected ${expectation(s.c)}; got ${s.got}${s.edge ? ' (edge right, values wrong)' : ''}`);
      if (s.out.answers[0] !== undefined) print(`      model answered: ${s.out.answers[0].replace(/\s+/g, ' ').slice(0, 300)}`);
    }
    print();

    if (!answered.length) throw new Error(`no routing call got an answer (first failure: ${String(scored[0]?.out.error)})`);
    expect(edges / scored.length).toBeGreaterThanOrEqual(minHitRate);
  },
  600_000,
);
