/** Polls `probe` until it gives a value, failing with `what` after `ms`. */
export async function until<T>(probe: () => Promise<T | undefined | false> | T | undefined | false, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
