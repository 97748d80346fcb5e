// Where the bench finds the platform's entry points and the fake vendor servers: the compiled output of the
// platform's own builds (`npx nx run standalone:build`; distributed: the five services' builds). The fakes ship in
// the libraries' compiled index (libs/*/src/testing), so no separate build is needed and nothing is committed.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
export const SERVICES = ['agents', 'calls', 'media-worker', 'webhook-dispatcher', 'gateway'];

/** `dist/apps/<app>/apps/<app>/src/main.js` under the given dist directory. */
export function entryOf(dist, app) {
  return join(dist, 'apps', app, 'apps', app, 'src', 'main.js');
}

/** The builds a mode needs that are missing, as the commands that make them. */
export function missingBuilds(dist, mode) {
  const apps = mode === 'standalone' ? ['standalone'] : SERVICES;
  return apps.filter((app) => !existsSync(entryOf(dist, app))).map((app) => `npx nx run ${app}:build`);
}

/** The compiled libraries holding the fakes: the standalone build's, else the media worker's (both carry them). */
export function loadLibs(dist) {
  const libs = ['standalone', 'media-worker'].map((app) => join(dist, 'apps', app, 'libs')).find((dir) => existsSync(join(dir, 'carriers', 'twilio', 'src', 'index.js')));
  if (!libs) throw new Error(`no build under ${dist}: npx nx run standalone:build`);
  return {
    twilio: require(join(libs, 'carriers', 'twilio', 'src', 'index.js')),
    speech: require(join(libs, 'providers', 'speech', 'src', 'index.js')),
    llm: require(join(libs, 'providers', 'llm', 'src', 'index.js')),
    audio: require(join(libs, 'media', 'audio', 'src', 'index.js')),
    engine: require(join(libs, 'media', 'voice-engine', 'src', 'index.js')),
  };
}
