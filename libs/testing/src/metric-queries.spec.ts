import { dashboardQueries, exposedFamilies, metricFamilies, prometheusRuleQueries } from './metric-queries';

describe('metricFamilies', () => {
  it('reads a histogram quantile as its family, not its _bucket series, nor the function or label names', () => {
    expect(
      metricFamilies('histogram_quantile(0.95, sum by (le, stage) (rate(parley_engine_stage_latency_seconds_bucket{stage="response"}[5m])))'),
    ).toEqual(['parley_engine_stage_latency_seconds']);
  });

  it('finds every metric of a binary expression, with _sum and _count reduced to the family and duplicates once', () => {
    const expr = 'sum(rate(a_seconds_sum[5m])) / sum(rate(a_seconds_count[5m])) > on(job) group_left max(b_total) or vector(0)';
    expect(metricFamilies(expr).sort()).toEqual(['a_seconds', 'b_total']);
  });

  it('reads Grafana interval variables as durations', () => {
    expect(metricFamilies('sum by (route) (rate(parley_http_request_duration_seconds_count{status=~"5.."}[$__rate_interval]))')).toEqual([
      'parley_http_request_duration_seconds',
    ]);
  });

  it('takes the name from a __name__ matcher', () => {
    expect(metricFamilies('{__name__="parley_webhook_queue_depth", job="x"}')).toEqual(['parley_webhook_queue_depth']);
  });

  it('refuses an expression that does not parse, and a selector with no metric name', () => {
    expect(() => metricFamilies('sum(rate(x_total[5m])')).toThrow(/does not parse/);
    expect(() => metricFamilies('sum(rate({job="x"}[5m]))')).toThrow(/without a metric name/);
  });
});

describe('dashboardQueries and prometheusRuleQueries', () => {
  it('lists the queries of panels, nested rows included, and of alerting and recording rules', () => {
    const dashboard = {
      panels: [{ title: 'A', targets: [{ expr: 'up' }] }, { title: 'Row', panels: [{ title: 'B', targets: [{ expr: 'x' }, {}] }] }],
      templating: {
        list: [
          { name: 'datasource', type: 'datasource', query: 'prometheus' },
          { name: 'namespace', type: 'query', query: { query: 'label_values(p_start_time{job="j"}, namespace)' } },
        ],
      },
    };
    expect(dashboardQueries(dashboard)).toEqual([
      { where: 'panel "A"', expr: 'up' },
      { where: 'panel "B"', expr: 'x' },
      { where: 'variable namespace', expr: 'p_start_time{job="j"}' },
    ]);
    const rules = 'apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nspec:\n  groups:\n    - name: g\n      rules:\n        - alert: High\n          expr: y > 1\n        - record: r\n          expr: sum(z)\n';
    expect(prometheusRuleQueries(rules)).toEqual([
      { where: 'rule High', expr: 'y > 1' },
      { where: 'rule r', expr: 'sum(z)' },
    ]);
  });
});

describe('exposedFamilies', () => {
  it('lists the families a scrape declares, with or without samples', () => {
    const text = '# HELP a_total A\n# TYPE a_total counter\na_total 3\n# HELP b_seconds B\n# TYPE b_seconds histogram\n';
    expect([...exposedFamilies(text)]).toEqual(['a_total', 'b_seconds']);
  });
});
