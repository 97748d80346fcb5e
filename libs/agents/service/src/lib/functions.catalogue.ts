import { readFileSync } from 'node:fs';
import { ConfigError } from '@parley/config';
import type { RegisteredFunction } from '@parley/contracts';

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Reads FUNCTIONS_FILE (a JSON array of registered functions) once at boot; every problem stops start-up
 * together, like the rest of the configuration.
 */
export function loadFunctions(file: string | undefined): RegisteredFunction[] {
  if (!file) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError([`FUNCTIONS_FILE: cannot read ${file} as JSON (${(error as Error).message})`]);
  }
  if (!Array.isArray(parsed)) throw new ConfigError(['FUNCTIONS_FILE: must hold a JSON array of functions']);
  const problems: string[] = [];
  const seen = new Set<string>();
  parsed.forEach((f: Partial<RegisteredFunction>, i) => {
    const at = `FUNCTIONS_FILE[${i}]`;
    if (typeof f?.name !== 'string' || !NAME.test(f.name)) problems.push(`${at}.name: letters, digits, _ and - (1-64)`);
    else if (seen.has(f.name)) problems.push(`${at}.name: ${f.name} is declared twice`);
    else if (['end_call', 'search_knowledge_base', 'transfer_call'].includes(f.name)) problems.push(`${at}.name: ${f.name} is reserved`);
    else seen.add(f.name);
    if (typeof f?.description !== 'string' || !f.description) problems.push(`${at}.description: is required`);
    if (!f?.parameters || typeof f.parameters !== 'object' || (f.parameters as { type?: string }).type !== 'object') {
      problems.push(`${at}.parameters: must be a JSON Schema of type object`);
    }
    try {
      if (!['https:', 'http:'].includes(new URL(String(f?.url)).protocol)) throw new Error();
    } catch {
      problems.push(`${at}.url: must be an http(s) URL`);
    }
    if (f?.method !== undefined && !['POST', 'PUT', 'PATCH', 'GET'].includes(f.method)) problems.push(`${at}.method: POST, PUT, PATCH or GET`);
    if (f?.timeout_seconds !== undefined && !(Number.isInteger(f.timeout_seconds) && f.timeout_seconds >= 1 && f.timeout_seconds <= 30)) {
      problems.push(`${at}.timeout_seconds: an integer from 1 to 30`);
    }
  });
  if (problems.length) throw new ConfigError(problems);
  return parsed as RegisteredFunction[];
}
