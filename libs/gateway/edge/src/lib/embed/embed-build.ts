import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { serviceLogger } from '@parley/observability';

/**
 * Where the browser client's build (nx run browser-client:bundle) is copied by the gateway's and standalone's
 * builds: `dist/apps/<app>/embed`, the app's root as seen from this file in its build output, as the proto files.
 */
export const EMBED_DIR = join(__dirname, '..', '..', '..', '..', '..', '..', 'embed');

export const EMBED_FILES = ['parley.js', 'parley.mjs'] as const;
export type EmbedFileName = (typeof EMBED_FILES)[number];

export interface EmbedFile {
  body: Buffer;
  /** Strong validator: a digest of the bytes, so replicas built from the same sources agree. */
  etag: string;
}

/** The browser client this gateway serves: one version, read once at boot. */
export interface EmbedBuild {
  /** The client's version (`1.0.0`). */
  version: string;
  /** The version and a fingerprint of the files (`1.0.0-3f9a1c2e4b`): the path segment of the immutable URLs. */
  build: string;
  files: Record<EmbedFileName, EmbedFile>;
}

/** Reads the build from `dir`; null when the client was not built into this app. */
export function readEmbedBuild(dir: string = EMBED_DIR): EmbedBuild | null {
  if (!existsSync(join(dir, 'manifest.json'))) return null;
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { version: string; build: string };
  const files = Object.fromEntries(
    EMBED_FILES.map((name) => {
      const body = readFileSync(join(dir, name));
      return [name, { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` }];
    }),
  ) as Record<EmbedFileName, EmbedFile>;
  return { version: manifest.version, build: manifest.build, files };
}

/** The build this gateway serves, read once at boot; a gateway built without it says so (its routes answer 503). */
export function loadEmbedBuild(): EmbedBuild | null {
  const build = readEmbedBuild();
  if (!build) serviceLogger('gateway').warn(`the browser client was not built into this gateway (no ${EMBED_DIR}): GET /v1/embed/ answers 503`);
  return build;
}

/** Whether an If-None-Match header names this ETag (a list, weak forms, or `*`). */
export function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === etag;
  });
}
