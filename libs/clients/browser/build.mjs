// Builds the browser client into the files GET /v1/embed/ serves: parley.js (a classic script setting the global
// `Parley`, for a <script> tag without a bundler), parley.mjs (an ES module) and manifest.json (the version and
// the build's fingerprint, which the gateway's immutable URLs carry). Run by `nx run browser-client:bundle` (named so, not `build`, because
// it is no buildable library: the apps that serve it depend on this target).
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');
const out = join(root, 'dist', 'libs', 'clients', 'browser');
const { version } = JSON.parse(readFileSync(join(here, 'src', 'version.json'), 'utf8'));

const common = {
  entryPoints: [join(here, 'src', 'index.ts')],
  bundle: true,
  minify: true,
  platform: 'browser',
  // Every browser with AudioWorklet and ES2020 (Chrome and Edge 80, Firefox 76, Safari 14.1).
  target: 'es2020',
  tsconfig: join(root, 'tsconfig.base.json'),
  banner: { js: `/*! Parley browser client ${version} | Apache-2.0 */` },
  legalComments: 'none',
  write: false,
  logLevel: 'warning',
};

const [classic, module] = await Promise.all([
  build({ ...common, format: 'iife', globalName: 'Parley' }),
  build({ ...common, format: 'esm' }),
]);
const files = { 'parley.js': classic.outputFiles[0].contents, 'parley.mjs': module.outputFiles[0].contents };
const fingerprint = createHash('sha256').update(files['parley.js']).update(files['parley.mjs']).digest('hex').slice(0, 10);

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
for (const [name, contents] of Object.entries(files)) writeFileSync(join(out, name), contents);
writeFileSync(join(out, 'manifest.json'), `${JSON.stringify({ version, build: `${version}-${fingerprint}` }, null, 2)}\n`);
console.log(`browser client ${version}-${fingerprint}: ${Object.entries(files).map(([n, c]) => `${n} ${c.length} B`).join(', ')}`);
