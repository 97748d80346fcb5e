'use strict';
// What deploy/kubernetes/validate.mjs checks beyond the API schemas, on rendered overlays (validate.spec.ts tests
// it: every overlay passes, and each defect it exists for is reported).
const { spawnSync } = require('node:child_process');
const { getMetadataStorage } = require('class-validator');
const { parseAllDocuments } = require('yaml');

/** The Secret every overlay reads and the operator creates (docs/deploy.md, Secrets); not in the manifests. */
const OPERATOR_SECRET = 'parley-secrets';
/** Stand-ins for the secret's required values, so a container's whole configuration can be validated. */
const SECRET_STAND_INS = { SECRET_KEY: 'stand-in-secret-key-of-at-least-32-characters', DATABASE_URL: 'postgres://parley@postgres:5432/parley' };
/** Which configuration class each deployable loads (apps/<service>/src/main.ts). */
const CONFIG_CLASS = { standalone: 'GatewayConfig', gateway: 'GatewayConfig' };

/** Every variable a configuration class reads (the same list loadConfig builds). */
function knownNames(cls) {
  const declared = getMetadataStorage().getTargetValidationMetadatas(cls, '', true, false).map((m) => m.propertyName);
  return new Set([...Object.keys(new cls()), ...declared]);
}

/**
 * A container's environment as Kubernetes builds it: envFrom ConfigMaps first, then env in order, `$(VAR)`
 * expanded from what is defined before. `secret(secretKeyRef)` and `field(fieldPath)` give the values of secret keys
 * and downward API fields (undefined: unset). Problems: references that do not resolve.
 */
function containerEnv(c, configMaps, { secret, field }) {
  const env = {};
  const problems = [];
  for (const from of c.envFrom ?? []) {
    if (!from.configMapRef) continue;
    const data = configMaps.get(from.configMapRef.name);
    if (!data) problems.push(`envFrom names ConfigMap ${from.configMapRef.name}, which is not rendered`);
    Object.assign(env, data ?? {});
  }
  for (const e of c.env ?? []) {
    let value;
    if (e.value !== undefined) value = e.value.replace(/\$\((\w+)\)/g, (whole, ref) => (ref in env ? env[ref] : (problems.push(`${e.name} refers to $(${ref}), not defined before it`), whole)));
    const cm = e.valueFrom?.configMapKeyRef;
    if (cm) {
      value = (configMaps.get(cm.name) ?? {})[cm.key];
      if (value === undefined && !cm.optional) problems.push(`${e.name} refers to ConfigMap ${cm.name} key ${cm.key}, which does not exist`);
    }
    if (e.valueFrom?.secretKeyRef) value = secret(e.valueFrom.secretKeyRef);
    if (e.valueFrom?.fieldRef) value = field(e.valueFrom.fieldRef.fieldPath);
    if (value === undefined) delete env[e.name];
    else env[e.name] = value;
  }
  return { env, problems };
}

function render(overlay) {
  const r = spawnSync('kubectl', ['kustomize', overlay], { encoding: 'utf8' });
  if (r.error) throw new Error(`kubectl: ${r.error.message} (install kubectl: .ci/run does)`);
  if (r.status !== 0) throw new Error(`kubectl kustomize ${overlay}: ${r.stderr}`);
  return parseAllDocuments(r.stdout).map((d) => {
    if (d.errors.length) throw new Error(`${overlay}: ${d.errors.join('; ')}`);
    return d.toJS();
  });
}

const matches = (selector = {}, labels = {}) => Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);

function labelSelectorMatches(selector, labels = {}) {
  if (!selector) return false;
  const plain = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const expressions = (selector.matchExpressions ?? []).every((e) =>
    e.operator === 'In' ? e.values.includes(labels[e.key]) : e.operator === 'NotIn' ? !e.values.includes(labels[e.key]) : e.operator === 'Exists' ? e.key in labels : !(e.key in labels),
  );
  return plain && expressions;
}

/** Problems of one rendered overlay, beyond the schemas. */
function crossCheck(objects, config) {
  const problems = [];
  const of = (kind) => objects.filter((o) => o.kind === kind);
  const named = (kind, name) => of(kind).find((o) => o.metadata.name === name);
  const deployments = of('Deployment');
  const configMaps = new Map(of('ConfigMap').map((c) => [c.metadata.name, c.data ?? {}]));
  const allNames = knownNames(config.GatewayConfig);

  for (const [name, data] of configMaps) {
    for (const key of Object.keys(data)) if (!allNames.has(key)) problems.push(`ConfigMap ${name}: ${key} is not a Parley configuration variable`);
  }

  for (const d of deployments) {
    const where = `Deployment ${d.metadata.name}`;
    const pod = d.spec.template.spec;
    if (!labelSelectorMatches(d.spec.selector, d.spec.template.metadata?.labels)) problems.push(`${where}: its selector does not match its pod labels`);
    if (pod.securityContext?.runAsNonRoot !== true) problems.push(`${where}: pod securityContext.runAsNonRoot is not true`);
    if (pod.securityContext?.seccompProfile?.type !== 'RuntimeDefault') problems.push(`${where}: pod seccompProfile is not RuntimeDefault`);
    if (!of('PodDisruptionBudget').some((p) => labelSelectorMatches(p.spec.selector, d.spec.template.metadata?.labels))) problems.push(`${where}: no PodDisruptionBudget selects it`);
    for (const c of pod.containers) {
      const at = `${where} container ${c.name}`;
      const sc = c.securityContext ?? {};
      if (sc.readOnlyRootFilesystem !== true) problems.push(`${at}: readOnlyRootFilesystem is not true`);
      if (sc.allowPrivilegeEscalation !== false) problems.push(`${at}: allowPrivilegeEscalation is not false`);
      if (!(sc.capabilities?.drop ?? []).includes('ALL')) problems.push(`${at}: capabilities do not drop ALL`);
      if (!c.resources?.requests?.cpu || !c.resources?.requests?.memory || !c.resources?.limits?.memory) problems.push(`${at}: resources need cpu and memory requests and a memory limit`);
      const ports = new Map((c.ports ?? []).map((p) => [p.name, p.containerPort]));
      for (const [probe, path] of [['livenessProbe', '/healthz'], ['readinessProbe', '/readyz']]) {
        const get = c[probe]?.httpGet;
        if (!get || get.path !== path) problems.push(`${at}: ${probe} must be an HTTP GET of ${path}`);
        else if (typeof get.port === 'string' && !ports.has(get.port)) problems.push(`${at}: ${probe} names port ${get.port}, which the container does not declare`);
      }

      for (const from of c.envFrom ?? []) {
        if (from.secretRef) problems.push(`${at}: envFrom a whole Secret hides which variables it sets; name each with secretKeyRef`);
      }
      for (const e of c.env ?? []) {
        if (!allNames.has(e.name) && !(c.env ?? []).some((o) => String(o.value ?? '').includes(`$(${e.name})`))) problems.push(`${at}: env ${e.name} is not a Parley configuration variable`);
        const secret = e.valueFrom?.secretKeyRef;
        if (secret?.name && secret.name !== OPERATOR_SECRET) problems.push(`${at}: ${e.name} reads Secret ${secret.name}; the operator's secret is ${OPERATOR_SECRET}`);
        if (secret && secret.key !== e.name) problems.push(`${at}: ${e.name} reads key ${secret.key}; the secret's keys are the variables' names`);
      }
      const secretKey = (c.env ?? []).find((e) => e.name === 'SECRET_KEY')?.valueFrom?.secretKeyRef;
      if (!secretKey || secretKey.optional) {
        problems.push(`${at}: SECRET_KEY must come from the secret, required (replicas must share it; a generated one would not survive the read-only root)`);
      }
      const built = containerEnv(c, configMaps, {
        secret: (ref) => (ref.optional ? undefined : SECRET_STAND_INS[ref.key] ?? (problems.push(`${at}: ${ref.key} is a required secret key validate.mjs has no stand-in for`), undefined)),
        field: () => '10.0.0.1',
      });
      for (const p of built.problems) problems.push(`${at}: ${p}`);
      const env = built.env;

      const service = c.args?.[0];
      const cls = config[CONFIG_CLASS[service] ?? 'ServiceConfig'];
      try {
        const loaded = config.loadConfig(cls, env);
        // The drain's arithmetic (docs/deploy.md): preStop, then the process's own deadline, within the grace period.
        const preStop = c.lifecycle?.preStop?.exec?.command;
        const preStopSeconds = preStop?.[0] === 'sleep' ? Number(preStop[1]) : c.lifecycle?.preStop?.sleep?.seconds ?? 0;
        const needed = preStopSeconds + loaded.CALL_DRAIN_SECONDS + Math.ceil(loaded.SHUTDOWN_GRACE_MS / 1000);
        const grace = pod.terminationGracePeriodSeconds ?? 30;
        if (grace <= needed) problems.push(`${where}: terminationGracePeriodSeconds ${grace} must exceed preStop ${preStopSeconds} s + CALL_DRAIN_SECONDS ${loaded.CALL_DRAIN_SECONDS} s + SHUTDOWN_GRACE_MS ${loaded.SHUTDOWN_GRACE_MS / 1000} s`);
        if (service !== 'gateway' && service !== 'standalone' && !loaded.OPS_PORT) problems.push(`${at}: ${service} needs OPS_PORT for its probes`);
        // Standalone hosts several services in one process, each of which would open OPS_PORT: the second fails.
        if (service === 'standalone' && loaded.OPS_PORT) problems.push(`${at}: OPS_PORT is set; standalone serves /healthz, /readyz and /metrics on PORT, and its services would each open OPS_PORT`);
        const probePort = (p) => (typeof p === 'string' ? ports.get(p) : p);
        const opsPort = service === 'gateway' || service === 'standalone' ? loaded.PORT : loaded.OPS_PORT;
        if (c.readinessProbe?.httpGet && probePort(c.readinessProbe.httpGet.port) !== opsPort) problems.push(`${at}: readinessProbe port is not the port ${service} serves /readyz on (${opsPort})`);
        if (service === 'media-worker' || service === 'standalone') {
          if ([...ports.values()].every((p) => p !== loaded.MEDIA_PORT)) problems.push(`${at}: MEDIA_PORT ${loaded.MEDIA_PORT} is not a container port`);
        }
        // The root filesystem is read-only: whatever this configuration writes must be on a writable volume.
        const volumes = new Set((pod.volumes ?? []).map((v) => v.name));
        for (const m of c.volumeMounts ?? []) if (!volumes.has(m.name)) problems.push(`${at}: mounts volume ${m.name}, which the pod does not have`);
        const writable = (path) => (c.volumeMounts ?? []).some((m) => !m.readOnly && (path === m.mountPath || path.startsWith(`${m.mountPath.replace(/\/$/, '')}/`)));
        const writes = [['/tmp', 'scratch files (the embedded PostgreSQL\'s socket, temporary files)']];
        if (!loaded.DATABASE_URL) writes.push([loaded.DATA_DIR, 'DATA_DIR (the embedded PostgreSQL, without DATABASE_URL)']);
        if (loaded.RECORDINGS_STORE === 'local') writes.push([loaded.RECORDINGS_DIR ?? `${loaded.DATA_DIR}/recordings`, 'recordings (RECORDINGS_STORE local)']);
        for (const [path, what] of writes) if (!writable(path)) problems.push(`${at}: ${path}, where it writes ${what}, is not on a writable volume`);
      } catch (error) {
        problems.push(`${at}: configuration refused at boot: ${error.message.replace(/\n\s*/g, ' ')}`);
      }
    }
  }

  for (const s of of('Service')) {
    const target = deployments.find((d) => matches(s.spec.selector, d.spec.template.metadata?.labels));
    if (!target) {
      problems.push(`Service ${s.metadata.name}: its selector matches no Deployment`);
      continue;
    }
    const ports = new Set(target.spec.template.spec.containers.flatMap((c) => (c.ports ?? []).flatMap((p) => [p.name, p.containerPort])));
    for (const p of s.spec.ports) if (!ports.has(p.targetPort ?? p.port)) problems.push(`Service ${s.metadata.name}: targetPort ${p.targetPort} is no port of Deployment ${target.metadata.name}`);
  }
  for (const ing of of('Ingress')) {
    for (const rule of ing.spec.rules ?? []) {
      for (const path of rule.http?.paths ?? []) {
        const { name, port } = path.backend.service;
        const svc = named('Service', name);
        if (!svc) problems.push(`Ingress ${ing.metadata.name}: backend Service ${name} is not rendered`);
        else if (!svc.spec.ports.some((p) => p.name === port.name || p.port === port.number)) problems.push(`Ingress ${ing.metadata.name}: Service ${name} has no port ${port.name ?? port.number}`);
      }
    }
    const tlsHosts = new Set((ing.spec.tls ?? []).flatMap((t) => t.hosts ?? []));
    for (const rule of ing.spec.rules ?? []) if (!tlsHosts.has(rule.host)) problems.push(`Ingress ${ing.metadata.name}: host ${rule.host} is served without TLS`);
  }
  for (const hpa of of('HorizontalPodAutoscaler')) {
    const ref = hpa.spec.scaleTargetRef;
    const target = named(ref.kind, ref.name);
    if (!target) problems.push(`HorizontalPodAutoscaler ${hpa.metadata.name}: scales ${ref.kind} ${ref.name}, which is not rendered`);
    if (target && target.spec.replicas > hpa.spec.maxReplicas) problems.push(`HorizontalPodAutoscaler ${hpa.metadata.name}: replicas above maxReplicas`);
  }
  for (const pdb of of('PodDisruptionBudget')) {
    if (!deployments.some((d) => labelSelectorMatches(pdb.spec.selector, d.spec.template.metadata?.labels))) problems.push(`PodDisruptionBudget ${pdb.metadata.name}: selects no Deployment`);
  }
  return problems;
}

module.exports = { render, crossCheck, containerEnv };
