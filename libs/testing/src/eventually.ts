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
