// The registry mirror this project installs from serves only the current platform's native packages, so npm
// leaves other platforms' optional binaries (swc, buf, …) out of package-lock.json and `npm ci` then refuses the
// lock. This records each missing optional platform package under its declared version, marked optional with
// its os/cpu, so `npm ci` accepts the lock and skips packages that do not fit the machine.
// Run after `npm install`: node tools/lock-optional-platforms.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const OS = ['darwin', 'linux', 'win32', 'freebsd', 'android', 'openbsd', 'sunos', 'aix', 'netbsd', 'openharmony'];
const CPU = ['arm64', 'aarch64', 'x64', 'ia32', 'arm', 'armv7', 'ppc64', 's390x', 'riscv64', 'loong64', 'wasm32', 'mips64el'];
let added = 0;
for (const [path, pkg] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const base = path === '' ? 'node_modules' : `${path}/node_modules`;
    const candidates = [`${base}/${name}`, `node_modules/${name}`];
    if (candidates.some((c) => lock.packages[c])) continue;
    const parts = name.split(/[-/]/);
    const os = OS.filter((o) => parts.includes(o));
    const cpu = CPU.filter((c) => parts.includes(c)).map((c) => (c === 'aarch64' ? 'arm64' : c === 'armv7' ? 'arm' : c));
    lock.packages[`node_modules/${name}`] = {
      version: String(version).replace(/^[\^~=]/, ''),
      ...(pkg.dev ? { dev: true } : {}),
      optional: true,
      ...(os.length ? { os } : {}),
      ...(cpu.length ? { cpu } : {}),
    };
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`recorded ${added} optional platform package(s)`);
