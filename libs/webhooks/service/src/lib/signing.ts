import { createHmac } from 'node:crypto';

/**
 * The signature header of the public interface: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, with
 * one `v1=` per active secret (more than one while a rotation overlaps).
 */
export function signatureHeader(body: string, secrets: string[], unixSeconds: number): string {
  const mac = (secret: string) => createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return [`t=${unixSeconds}`, ...secrets.map((s) => `v1=${mac(s)}`)].join(',');
}

export const HEADER = {
  signature: 'Service-Signature',
  timestamp: 'Service-Timestamp',
  eventId: 'Service-Event-Id',
  eventType: 'Service-Event-Type',
  attempt: 'Service-Delivery-Attempt',
} as const;

/** Waits before attempts 2 to 6: 1 s, 5 s, 25 s, 2 min, 10 min. */
export const RETRY_DELAYS_MS = [1_000, 5_000, 25_000, 120_000, 600_000];
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;
export const DISABLE_AFTER_FAILURES = 20;
/** A receiver must answer 2xx within this long. */
export const DELIVERY_TIMEOUT_MS = 10_000;

/** `*` matches every type, `call.*` the call family, anything else exactly. */
export function subscribes(events: string[], type: string): boolean {
  return events.some((e) => e === '*' || e === type || (e.endsWith('.*') && type.startsWith(e.slice(0, -1))));
}
