// Generates the TypeScript contracts (message types, NestJS controller and client interfaces) from proto/ with
// buf + ts-proto. `--check` generates into a scratch folder and fails when the committed code is stale.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const protoDir = join(root, 'proto');
const contractsSrc = join(root, 'libs/contracts/src');
const buf = (...args) => execFileSync(join(root, 'node_modules/.bin/buf'), args, { cwd: protoDir, stdio: 'inherit' });

const listFiles = (dir, root = dir) =>
  readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? listFiles(full, root) : [relative(root, full)];
  });

buf('lint');
if (!process.argv.includes('--check')) {
  rmSync(join(contractsSrc, 'gen'), { recursive: true, force: true });
  buf('generate', '-o', contractsSrc);
  console.log(`generated ${listFiles(join(contractsSrc, 'gen')).length} files into libs/contracts/src/gen`);
} else {
  const scratch = mkdtempSync(join(tmpdir(), 'parley-proto-'));
  buf('generate', '-o', scratch);
  const fresh = listFiles(join(scratch, 'gen')).sort();
  const committed = listFiles(join(contractsSrc, 'gen')).sort();
  const stale =
    fresh.join() !== committed.join() ||
    fresh.some((f) => readFileSync(join(scratch, 'gen', f), 'utf8') !== readFileSync(join(contractsSrc, 'gen', f), 'utf8'));
  rmSync(scratch, { recursive: true, force: true });
  if (stale) {
    console.error('libs/contracts/src/gen is stale: run `npm run proto:gen` and commit the result.');
    process.exit(1);
  }
  console.log('generated contracts are up to date');
}
