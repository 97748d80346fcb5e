import type { ToolDefinition } from '@parley/llm';
import { checkParameters, parseArguments, refused, ToolArguments } from './arguments';
import { toolFetch, toolTimeoutMs } from './http';
import { CustomFunctionConfig, ToolOutcome, ToolRuntime } from './types';

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_-]+)\s*\}\}/g;
const WITHOUT_BODY = new Set(['GET', 'DELETE', 'HEAD']);

/** What the model is told: the description and the closed argument schema built from `parameters`. */
export function customFunctionDefinition(config: CustomFunctionConfig): ToolDefinition {
  const parameters = config.request.parameters ?? [];
  return {
    name: config.name,
    description: config.description,
    parameters: {
      type: 'object',
      properties: Object.fromEntries(
        parameters.map((p) => [p.name, { type: p.type, ...(p.description ? { description: p.description } : {}), ...(p.enum?.length ? { enum: p.enum } : {}) }]),
      ),
      required: parameters.filter((p) => p.required).map((p) => p.name),
      additionalProperties: false,
    },
  };
}

export interface BuiltRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
}

/**
 * The HTTP request for valid arguments:
 * - `{{name}}` in the URL: the argument, percent-escaped (an absent optional one: empty);
 * - `in: query` arguments: appended to the query string;
 * - `in: body` arguments: a JSON object, or `body_template` with its placeholders filled JSON-escaped (the value
 *   as it would appear inside a JSON string, without the quotes: `"{{note}}"` in the template is a valid JSON
 *   string whatever the caller said; numbers and booleans as written). GET and DELETE send no body: their body
 *   arguments go to the query string;
 * - headers: `headers`, then the secret ones; `content-type: application/json` unless a header sets it.
 */
export function buildCustomRequest(config: CustomFunctionConfig, args: ToolArguments): BuiltRequest {
  const request = config.request;
  const parameters = request.parameters ?? [];
  const method = (request.method || 'POST').toUpperCase();
  const where = (name: string) => parameters.find((p) => p.name === name)?.in ?? 'body';
  const url = new URL(request.url.replace(PLACEHOLDER, (_, name: string) => (args[name] === undefined ? '' : encodeURIComponent(String(args[name])))));
  const bodyArgs: ToolArguments = {};
  for (const [name, value] of Object.entries(args)) {
    const place = where(name);
    if (place === 'query' || (place === 'body' && WITHOUT_BODY.has(method))) url.searchParams.append(name, String(value));
    else if (place === 'body') bodyArgs[name] = value;
  }
  const headers: Record<string, string> = { 'user-agent': 'Parley-Tools/1', ...request.headers, ...request.secret_header_values };
  if (WITHOUT_BODY.has(method)) return { url: url.href, method, headers };
  if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  const body = request.body_template
    ? request.body_template.replace(PLACEHOLDER, (_, name: string) => {
        const value = args[name];
        if (value === undefined) return '';
        return typeof value === 'string' ? JSON.stringify(value).slice(1, -1) : String(value);
      })
    : JSON.stringify(bodyArgs);
  return { url: url.href, method, headers, body };
}

/** Validates the model's arguments (refusing without a request when they are off), then calls the function. */
export async function runCustomFunction(config: CustomFunctionConfig, rawArguments: string, rt: ToolRuntime): Promise<ToolOutcome> {
  const parsed = parseArguments(rawArguments);
  if ('problem' in parsed) return refused([parsed.problem]);
  const problems = checkParameters(parsed.args, config.request.parameters ?? []);
  if (problems.length) return refused(problems);
  let built: BuiltRequest;
  try {
    built = buildCustomRequest(config, parsed.args);
  } catch {
    return { ok: false, result: 'The tool call failed: its URL is not valid.', error: 'invalid URL' };
  }
  return toolFetch({ ...built, timeoutMs: toolTimeoutMs(config.request.timeout_seconds) }, rt);
}
