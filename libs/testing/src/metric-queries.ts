import { parser } from '@prometheus-io/lezer-promql';
import { parse as parseYaml } from 'yaml';

type SyntaxNode = ReturnType<typeof parser.parse>['topNode'];

/** The histogram's and summary's series below a metric family's own name. */
const SERIES_SUFFIX = /_(bucket|sum|count)$/;

/**
 * The metric families a PromQL expression reads: each vector selector's name (`rate(x_bucket[5m])` reads `x`), the
 * `_bucket`/`_sum`/`_count` series reduced to their family. Parsed with Prometheus's own grammar, so function
 * names, keywords, label names and values are never taken for metrics. Grafana's interval variables
 * (`$__rate_interval`, …) are read as a duration. Throws on an expression that does not parse, or a selector
 * without a metric name.
 */
export function metricFamilies(expr: string): string[] {
  const promql = expr.replace(/\$__\w+|\$\{__\w+\}/g, '5m');
  const tree = parser.parse(promql);
  const names = new Set<string>();
  const problems: string[] = [];
  tree.iterate({
    enter: (node) => {
      if (node.type.isError) problems.push(`does not parse at ${node.from}`);
      if (node.name !== 'VectorSelector') return;
      const name = node.node.getChild('Identifier') ?? nameMatcher(node.node, promql);
      if (!name) problems.push(`a selector without a metric name: ${promql.slice(node.from, node.to)}`);
      else names.add((typeof name === 'string' ? name : promql.slice(name.from, name.to)).replace(SERIES_SUFFIX, ''));
    },
  });
  if (problems.length) throw new Error(`${expr}: ${problems.join('; ')}`);
  return [...names];
}

/** `{__name__="x"}`: the metric named by its matcher. */
function nameMatcher(selector: SyntaxNode, text: string): string | undefined {
  for (const matcher of selector.getChild('LabelMatchers')?.getChildren('UnquotedLabelMatcher') ?? []) {
    const label = matcher.getChild('LabelName');
    const value = matcher.getChild('StringLiteral');
    if (label && value && text.slice(label.from, label.to) === '__name__' && matcher.getChild('MatchOp')?.getChild('EqlSingle')) {
      return JSON.parse(text.slice(value.from, value.to).replace(/^'(.*)'$/, '"$1"')) as string;
    }
  }
  return undefined;
}

interface GrafanaPanel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: GrafanaPanel[];
}

interface GrafanaDashboard {
  panels?: GrafanaPanel[];
  templating?: { list?: { name: string; type: string; query?: string | { query?: string } }[] };
}

/**
 * Every PromQL query of a Grafana dashboard, with where it is: panels' targets (panels in rows included) and the
 * selectors of query variables (`label_values(selector, label)`).
 */
export function dashboardQueries(dashboard: GrafanaDashboard): { where: string; expr: string }[] {
  const walk = (panels: GrafanaPanel[] = []): { where: string; expr: string }[] =>
    panels.flatMap((p) => [
      ...(p.targets ?? []).filter((t) => t.expr).map((t) => ({ where: `panel "${p.title ?? '?'}"`, expr: t.expr as string })),
      ...walk(p.panels),
    ]);
  const variables = (dashboard.templating?.list ?? [])
    .filter((v) => v.type === 'query')
    .map((v) => ({ where: `variable ${v.name}`, query: typeof v.query === 'string' ? v.query : (v.query?.query ?? '') }))
    .map(({ where, query }) => ({ where, expr: /^\s*label_values\((.+),\s*\w+\s*\)\s*$/.exec(query)?.[1] ?? query }));
  return [...walk(dashboard.panels), ...variables];
}

/** Every rule's expression of a PrometheusRule (monitoring.coreos.com/v1) document, with the rule it belongs to. */
export function prometheusRuleQueries(yamlText: string): { where: string; expr: string }[] {
  const doc = parseYaml(yamlText) as { spec?: { groups?: { rules?: { alert?: string; record?: string; expr: string }[] }[] } };
  return (doc.spec?.groups ?? []).flatMap((g) => (g.rules ?? []).map((r) => ({ where: `rule ${r.alert ?? r.record}`, expr: String(r.expr) })));
}

/** The metric families a Prometheus text exposition declares (`# TYPE name kind`), samples or not. */
export function exposedFamilies(exposition: string): Set<string> {
  return new Set([...exposition.matchAll(/^# TYPE (\S+) \S+$/gm)].map((m) => m[1]));
}
