import 'reflect-metadata';
import { join } from 'node:path';
import * as config from '@parley/config';

// Rendered YAML: the tests reach into it by path and change what they break.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Yaml = any;
type K8sObject = { kind: string; metadata: { name: string }; [key: string]: Yaml };
// A CommonJS module shared with validate.mjs, which Node runs without a build.
const { render, crossCheck } = require('./checks.cjs') as {
  render(dir: string): K8sObject[];
  crossCheck(objects: K8sObject[], lib: typeof config): string[];
};

const rendered = new Map<string, K8sObject[]>();
function overlay(name: string): K8sObject[] {
  const objects = rendered.get(name) ?? render(join(__dirname, 'overlays', name));
  rendered.set(name, objects);
  return structuredClone(objects);
}
function find(objects: K8sObject[], kind: string, prefix: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name.startsWith(prefix));
  if (!found) throw new Error(`no ${kind} ${prefix}* rendered`);
  return found;
}
const container = (objects: K8sObject[], name: string) => find(objects, 'Deployment', name).spec.template.spec.containers[0];

describe('the Kubernetes overlays', () => {
  it.each(['standalone', 'distributed'])('%s passes every check', (name) => {
    expect(crossCheck(overlay(name), config)).toEqual([]);
  });

  it('reports a ConfigMap key that is no configuration variable, and a value the services refuse at boot', () => {
    const objects = overlay('distributed');
    Object.assign(find(objects, 'ConfigMap', 'parley-config').data, { NOT_A_SETTING: '1', RPC_TIMEOUT_MS: 'soon' });
    const problems = crossCheck(objects, config);
    expect(problems).toContainEqual(expect.stringMatching(/NOT_A_SETTING is not a Parley configuration variable/));
    expect(problems).toContainEqual(expect.stringMatching(/parley-media-worker .*refused at boot: .*RPC_TIMEOUT_MS/));
  });

  it('reports a grace period that does not cover preStop, CALL_DRAIN_SECONDS and SHUTDOWN_GRACE_MS', () => {
    const objects = overlay('distributed');
    find(objects, 'ConfigMap', 'parley-config').data.CALL_DRAIN_SECONDS = '300';
    expect(crossCheck(objects, config)).toContainEqual(
      'Deployment parley-media-worker: terminationGracePeriodSeconds 50 must exceed preStop 5 s + CALL_DRAIN_SECONDS 300 s + SHUTDOWN_GRACE_MS 10 s',
    );
  });

  it('reports what a configuration writes outside the volumes of a read-only root', () => {
    const objects = overlay('distributed');
    find(objects, 'ConfigMap', 'parley-config').data.RECORDINGS_STORE = 'local';
    const standalone = overlay('standalone');
    const pod = find(standalone, 'Deployment', 'parley').spec.template.spec;
    pod.containers[0].volumeMounts = pod.containers[0].volumeMounts.filter((m: Yaml) => m.mountPath !== '/data');
    expect(crossCheck(objects, config)).toContain(
      'Deployment parley-media-worker container parley: /data/recordings, where it writes recordings (RECORDINGS_STORE local), is not on a writable volume',
    );
    expect(crossCheck(standalone, config)).toEqual(
      expect.arrayContaining([
        'Deployment parley container parley: /data, where it writes DATA_DIR (the embedded PostgreSQL, without DATABASE_URL), is not on a writable volume',
        'Deployment parley container parley: /data/recordings, where it writes recordings (RECORDINGS_STORE local), is not on a writable volume',
      ]),
    );
  });

  it('reports a container without its probes, resources or hardened security context', () => {
    const objects = overlay('standalone');
    const c = container(objects, 'parley');
    delete c.readinessProbe;
    c.livenessProbe.httpGet.port = 'admin';
    delete c.resources.limits;
    c.securityContext.readOnlyRootFilesystem = false;
    c.securityContext.capabilities.drop = [];
    find(objects, 'Deployment', 'parley').spec.template.spec.securityContext.seccompProfile = { type: 'Unconfined' };
    expect(crossCheck(objects, config)).toEqual(
      expect.arrayContaining([
        'Deployment parley container parley: readinessProbe must be an HTTP GET of /readyz',
        'Deployment parley container parley: livenessProbe names port admin, which the container does not declare',
        'Deployment parley container parley: resources need cpu and memory requests and a memory limit',
        'Deployment parley container parley: readOnlyRootFilesystem is not true',
        'Deployment parley container parley: capabilities do not drop ALL',
        'Deployment parley: pod seccompProfile is not RuntimeDefault',
      ]),
    );
  });

  it('reports OPS_PORT in the standalone pod, where each service of the one process would open it', () => {
    const objects = overlay('standalone');
    find(objects, 'ConfigMap', 'parley-config').data.OPS_PORT = '9090';
    expect(crossCheck(objects, config)).toContain(
      'Deployment parley container parley: OPS_PORT is set; standalone serves /healthz, /readyz and /metrics on PORT, and its services would each open OPS_PORT',
    );
  });

  it('reports a readiness probe on another port than the service serves /readyz on', () => {
    const objects = overlay('distributed');
    const c = container(objects, 'parley-agents');
    c.ports.push({ name: 'other', containerPort: 9999 });
    c.readinessProbe.httpGet.port = 'other';
    expect(crossCheck(objects, config)).toContain('Deployment parley-agents container parley: readinessProbe port is not the port agents serves /readyz on (9090)');
  });

  it('reports a Service, Ingress, autoscaler or budget pointing at nothing', () => {
    const objects = overlay('distributed');
    find(objects, 'Service', 'parley-calls').spec.selector = { 'app.kubernetes.io/name': 'parley-call' };
    find(objects, 'Ingress', 'parley-media').spec.rules[0].http.paths[0].backend.service.port = { name: 'audio' };
    find(objects, 'HorizontalPodAutoscaler', 'parley-gateway').spec.scaleTargetRef.name = 'gateway';
    find(objects, 'PodDisruptionBudget', 'parley-webhook-dispatcher').spec.selector.matchLabels = { 'app.kubernetes.io/name': 'webhooks' };
    expect(crossCheck(objects, config)).toEqual(
      expect.arrayContaining([
        'Service parley-calls: its selector matches no Deployment',
        'Ingress parley-media: Service parley-media-worker has no port audio',
        'HorizontalPodAutoscaler parley-gateway: scales Deployment gateway, which is not rendered',
        'PodDisruptionBudget parley-webhook-dispatcher: selects no Deployment',
        'Deployment parley-webhook-dispatcher: no PodDisruptionBudget selects it',
      ]),
    );
  });

  it('reports secrets read from another Secret or key, an optional SECRET_KEY, and an undefined $(VAR)', () => {
    const objects = overlay('distributed');
    const env = (name: string): Yaml => container(objects, 'parley-media-worker').env.find((e: Yaml) => e.name === name);
    env('LLM_API_KEY').valueFrom.secretKeyRef.name = 'vendor-keys';
    env('DEEPGRAM_API_KEY').valueFrom.secretKeyRef.key = 'deepgram';
    env('SECRET_KEY').valueFrom.secretKeyRef.optional = true;
    env('MEDIA_GRPC_ADVERTISE_URL').value = '$(HOST_IP):50053';
    expect(crossCheck(objects, config)).toEqual(
      expect.arrayContaining([
        'Deployment parley-media-worker container parley: LLM_API_KEY reads Secret vendor-keys; the operator\'s secret is parley-secrets',
        'Deployment parley-media-worker container parley: DEEPGRAM_API_KEY reads key deepgram; the secret\'s keys are the variables\' names',
        expect.stringMatching(/parley-media-worker container parley: SECRET_KEY must come from the secret, required/),
        'Deployment parley-media-worker container parley: MEDIA_GRPC_ADVERTISE_URL refers to $(HOST_IP), not defined before it',
      ]),
    );
  });
});
