import type { ToolDefinition } from '@parley/llm';
import { parseArguments } from './arguments';
import { toolFetch } from './http';
import { ToolRuntime } from './types';

/** The most the transfer webhook is waited on before the call moves (the spec's limit). */
export const TRANSFER_WEBHOOK_WAIT_MS = 3000;

/** The model may say why; it never chooses where: the destination is fixed by configuration. */
export function transferDefinition(name: string, description: string): ToolDefinition {
  return {
    name,
    description,
    parameters: {
      type: 'object',
      properties: { reason: { type: 'string', description: 'Why the caller is being transferred, in a few words.' } },
      additionalProperties: false,
    },
  };
}

/** The `reason` argument, if the model gave one; anything else it sent (a destination, say) is ignored. */
export function transferReason(rawArguments: string): string {
  const parsed = parseArguments(rawArguments);
  if ('problem' in parsed) return '';
  const reason = parsed.args['reason'];
  return typeof reason === 'string' ? reason.slice(0, 500) : '';
}

/**
 * Posts the transfer details to `transfer.webhook_url` through the outbound-request guard and waits for it at most
 * TRANSFER_WEBHOOK_WAIT_MS: an answer, a failure or the deadline, the transfer goes ahead all the same.
 */
export async function notifyTransfer(
  webhookUrl: string,
  details: { callId: string; tool: string; destination: string; reason: string },
  rt: ToolRuntime,
): Promise<{ ok: boolean; error?: string }> {
  const outcome = await toolFetch(
    {
      url: webhookUrl,
      method: 'POST',
      headers: { 'user-agent': 'Parley-Tools/1', 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'call.transfer', call_id: details.callId, tool: details.tool, destination: details.destination, reason: details.reason }),
      timeoutMs: TRANSFER_WEBHOOK_WAIT_MS,
    },
    rt,
  );
  return outcome.ok ? { ok: true } : { ok: false, error: outcome.error };
}
