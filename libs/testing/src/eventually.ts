/**
 * Polls `probe` every 250 ms until it yields a value (a throw counts as not yet), and resolves with that value;
 * rejects with "timed out waiting for <what>" after `timeoutMs`.
 */
export async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** `eventually` for a synchronous check (what a test server has received, say). */
export function waitFor<T>(check: () => T | undefined, timeoutMs = 20_000, what = 'the expected value'): Promise<T> {
  return eventually(async () => check(), timeoutMs, what);
}
