import type { ToolDefinition } from '@parley/llm';
import { checkSchema, parseArguments, refused } from './arguments';
import { toolFetch, toolTimeoutMs } from './http';
import { RegisteredFunction, ToolOutcome, ToolRuntime } from './types';

export function registeredFunctionDefinition(fn: RegisteredFunction): ToolDefinition {
  return { name: fn.name, description: fn.description, parameters: fn.parameters };
}

/**
 * A deployment-registered function (FUNCTIONS_FILE): the arguments, checked against its schema, POSTed as JSON
 * to its URL (GET: as the query string), through the same guard as custom functions. The operator wrote the
 * URL, so http is accepted; the address must still pass the guard.
 */
export async function runRegisteredFunction(fn: RegisteredFunction, rawArguments: string, rt: ToolRuntime): Promise<ToolOutcome> {
  const parsed = parseArguments(rawArguments);
  if ('problem' in parsed) return refused([parsed.problem]);
  const problems = checkSchema(parsed.args, fn.parameters);
  if (problems.length) return refused(problems);
  const method = (fn.method || 'POST').toUpperCase();
  const headers = { 'user-agent': 'Parley-Tools/1' };
  const timeoutMs = toolTimeoutMs(fn.timeout_seconds);
  if (method === 'GET') {
    let url: URL;
    try {
      url = new URL(fn.url);
    } catch {
      return { ok: false, result: 'The tool call failed: its URL is not valid.', error: 'invalid URL' };
    }
    for (const [name, value] of Object.entries(parsed.args)) url.searchParams.append(name, typeof value === 'string' ? value : JSON.stringify(value));
    return toolFetch({ url: url.href, method, headers, timeoutMs, allowHttp: true }, rt);
  }
  return toolFetch(
    { url: fn.url, method, headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(parsed.args), timeoutMs, allowHttp: true },
    rt,
  );
}
