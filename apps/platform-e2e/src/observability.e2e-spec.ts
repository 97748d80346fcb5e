import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { dashboardQueries, eventually, exposedFamilies, metricFamilies, prometheusRuleQueries } from '@parley/testing';
import { PhonePlatform, startPhonePlatform } from './support/phone-platform';

const KEY = 'vsk_e2e_observability_key_0001';
const OBSERVABILITY = join(__dirname, '..', '..', '..', 'deploy', 'observability');
/** Distributed when a NATS is at hand (as in Kubernetes: each service scraped on its own), standalone otherwise. */
const MODE = process.env['NATS_URL'] ? 'distributed' : 'standalone';
const PROCESSES = MODE === 'distributed' ? ['gateway', 'agents', 'calls', 'media-worker', 'webhook-dispatcher'] : ['standalone'];

const dashboard = JSON.parse(readFileSync(join(OBSERVABILITY, 'grafana', 'parley-overview.json'), 'utf8'));
const rulesYaml = readFileSync(join(OBSERVABILITY, 'prometheus-rules.yaml'), 'utf8');
const queries = [...dashboardQueries(dashboard), ...prometheusRuleQueries(rulesYaml)];

describe('the alert rules and the dashboard as files', () => {
  const doc = parseYaml(rulesYaml);
  const rules: { alert: string; for?: string; labels: Record<string, string>; annotations: Record<string, string> }[] = doc.spec.groups.flatMap(
    (g: { rules: unknown[] }) => g.rules,
  );

  it('is a PrometheusRule whose every alert has a severity, a summary and a runbook section that exists', () => {
    expect(doc).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule' });
    // GitHub's anchors of docs/observability.md's headings.
    const anchors = new Set(
      [...readFileSync(join(__dirname, '..', '..', '..', 'docs', 'observability.md'), 'utf8').matchAll(/^#+ (.+)$/gm)].map((m) =>
        m[1].toLowerCase().replace(/[^a-z0-9 -]/g, '').replace(/ /g, '-'),
      ),
    );
    expect(rules.length).toBeGreaterThanOrEqual(5);
    for (const rule of rules) {
      expect({ alert: rule.alert, severity: rule.labels.severity }).toEqual({ alert: rule.alert, severity: expect.stringMatching(/^(critical|warning|info)$/) });
      expect(rule.annotations.summary).toBeTruthy();
      const [file, anchor] = rule.annotations.runbook_url.split('#');
      expect({ alert: rule.alert, file, anchor: anchors.has(anchor) }).toEqual({ alert: rule.alert, file: 'docs/observability.md', anchor: true });
      if (rule.for !== undefined) expect(rule.for).toMatch(/^\d+[smh]$/);
    }
  });

  it('alerts on what the issue names: voice-to-voice, pacing, webhook backlog age, disabled endpoints, provider fallbacks', () => {
    const named = (metric: string) => prometheusRuleQueries(rulesYaml).some((q) => metricFamilies(q.expr).includes(metric));
    for (const metric of [
      'parley_engine_stage_latency_seconds',
      'parley_engine_frames_late_total',
      'parley_webhook_queue_oldest_age_seconds',
      'parley_webhook_disabled_endpoints',
      'parley_engine_provider_fallbacks_total',
    ]) {
      expect({ metric, alerted: named(metric) }).toEqual({ metric, alerted: true });
    }
  });

  it('has panels with unique ids that query the dashboard’s own datasource variable', () => {
    const panels: { id: number; type: string; datasource?: { uid: string } }[] = dashboard.panels;
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    expect(dashboard.templating.list.map((v: { name: string }) => v.name)).toContain('datasource');
    for (const panel of panels.filter((p) => p.type !== 'row')) expect(panel.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
  });
});

/**
 * The Grafana dashboard and the Prometheus alert rules (deploy/observability) read only metrics that the running
 * platform exports: every metric family their queries name is declared (`# TYPE`) on some process's /metrics.
 */
describe(`dashboard and alert rules against the running platform's /metrics (${MODE})`, () => {
  let phone: PhonePlatform;
  let exported: Map<string, string[]>;

  beforeAll(async () => {
    phone = await startPhonePlatform(KEY, {}, MODE);
    // One phone call, so that whatever is created on first use (streams, the engine's series) exists.
    const agent = (await phone.api.post('/v1/agents', { name: 'Front desk', languages: [{ code: 'en', greeting: 'Hello, this is the front desk.' }] })).body;
    const call = (await phone.api.post('/v1/calls', { agent_id: agent.id, to: '+15550102001' })).body;
    const media = await phone.twilio.connectMediaStream(call.carrier_call_id);
    await eventually(async () => (media.receivedFrames > 25 ? true : undefined), 20_000, 'the agent to speak');
    await media.stop();
    await eventually(async () => ((await phone.api.get(`/v1/calls/${call.id}`)).body.status === 'ended' ? true : undefined), 15_000, 'the call to end');

    exported = new Map();
    for (const name of PROCESSES) {
      // The gateway may be ready before another service has opened its ops port.
      await eventually(async () => ((await fetch(`${phone.platform.opsUrl(name)}/readyz`)).ok ? true : undefined), 30_000, `${name} to be ready`);
      const res = await fetch(`${phone.platform.opsUrl(name)}/metrics`);
      expect(res.status).toBe(200);
      for (const family of exposedFamilies(await res.text())) exported.set(family, [...(exported.get(family) ?? []), name]);
    }
  }, 120_000);

  afterAll(async () => {
    await phone?.stop();
  }, 60_000);

  it('has queries to check, every one parsing as PromQL', () => {
    expect(queries.length).toBeGreaterThan(30);
    for (const { expr } of queries) expect(() => metricFamilies(expr)).not.toThrow();
  });

  it('names in every dashboard query and every alert rule only metrics some process exports', () => {
    const missing = queries.flatMap(({ where, expr }) => metricFamilies(expr).filter((f) => !exported.has(f)).map((f) => `${where}: ${f}`));
    expect(missing).toEqual([]);
  });

  it('scrapes the media worker’s own metrics (streams, pacing, the engine’s stages)', () => {
    for (const family of ['parley_media_streams_total', 'parley_media_playout_jitter_seconds', 'parley_engine_stage_latency_seconds']) {
      expect(exported.get(family)).toEqual([MODE === 'distributed' ? 'media-worker' : 'standalone']);
    }
  });
});
