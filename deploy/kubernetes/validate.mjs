#!/usr/bin/env node
// Renders every overlay under deploy/kubernetes/overlays with `kubectl kustomize`, validates each object against
// the Kubernetes API schemas (kubernetes-models; an unknown apiVersion/kind fails), and checks what the schemas
// cannot: probes, resources and the hardened security context on every Deployment; Services, Ingresses, HPAs and
// PodDisruptionBudgets pointing at what exists; every ConfigMap and Secret reference resolving; the termination
// grace period covering preStop + CALL_DRAIN_SECONDS + SHUTDOWN_GRACE_MS; and each container's configuration,
// ConfigMap and env together, passing Parley's own boot-time validation (libs/platform/config, loadConfig).
//
//   node deploy/kubernetes/validate.mjs        (needs kubectl with Kustomize v5: kubectl ≥ 1.27)
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import checks from './checks.cjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const require = createRequire(import.meta.url);

/** libs/platform/config compiled on the fly with SWC (decorator metadata on, as the build does), then loaded. */
function loadConfigLibrary() {
  const swc = require('@swc/core');
  const src = join(repo, 'libs', 'platform', 'config', 'src');
  // Inside the checkout (tmp/ is ignored), so that class-validator and friends resolve from its node_modules.
  mkdirSync(join(repo, 'tmp'), { recursive: true });
  const out = mkdtempSync(join(repo, 'tmp', 'config-'));
  for (const file of readdirSync(src).filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'))) {
    const { code } = swc.transformFileSync(join(src, file), {
      jsc: { parser: { syntax: 'typescript', decorators: true }, transform: { legacyDecorator: true, decoratorMetadata: true }, target: 'es2022', keepClassNames: true },
      module: { type: 'commonjs' },
    });
    writeFileSync(join(out, file.replace(/\.ts$/, '.js')), code);
  }
  require('reflect-metadata');
  try {
    return require(join(out, 'index.js'));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

async function modelClass(apiVersion, kind) {
  try {
    return (await import(`kubernetes-models/${apiVersion}/${kind}`))[kind];
  } catch {
    return undefined;
  }
}

const { render, crossCheck } = checks;

async function main() {
  const config = loadConfigLibrary();
  const overlays = readdirSync(join(here, 'overlays')).sort();
  let passed = 0;
  let failed = 0;
  for (const overlay of overlays) {
    let objects;
    try {
      objects = render(join(here, 'overlays', overlay));
    } catch (error) {
      failed++;
      process.stdout.write(`FAIL ${overlay}: ${error.message}\n`);
      continue;
    }
    for (const object of objects) {
      const label = `${overlay}: ${object.kind} ${object.metadata?.name}`;
      const Model = await modelClass(object.apiVersion, object.kind);
      try {
        if (!Model) throw new Error(`unknown apiVersion/kind ${object.apiVersion} ${object.kind}`);
        new Model(object).validate();
        passed++;
      } catch (error) {
        failed++;
        process.stdout.write(`FAIL ${label}: ${error.message}\n`);
      }
    }
    const problems = crossCheck(objects, config);
    for (const p of problems) process.stdout.write(`FAIL ${overlay}: ${p}\n`);
    if (problems.length) failed++;
    else passed++;
    process.stdout.write(`${problems.length ? 'FAIL' : 'ok  '} ${overlay}: ${objects.length} objects, cross-checks ${problems.length ? `${problems.length} problems` : 'passed'}\n`);
  }
  process.stdout.write(`manifests: ${passed} passed, ${failed} failed\n`);
  process.exitCode = failed ? 1 : 0;
}

main().catch((error) => {
  process.stdout.write(`FAIL ${error.stack ?? error}\nmanifests: 0 passed, 1 failed\n`);
  process.exitCode = 1;
});
