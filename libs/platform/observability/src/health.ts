export type ReadinessCheck = () => Promise<boolean>;

/**
 * Readiness of one service: false until every named dependency (database, bus, …) answers. Liveness is separate
 * and only says the process is running.
 */
export class HealthRegistry {
  private readonly checks = new Map<string, ReadinessCheck>();

  register(name: string, check: ReadinessCheck): void {
    this.checks.set(name, check);
  }

  async readiness(timeoutMs = 2000): Promise<{ ready: boolean; checks: Record<string, boolean> }> {
    const entries = await Promise.all(
      [...this.checks].map(async ([name, check]) => [name, await withTimeout(check, timeoutMs)] as const),
    );
    return { ready: entries.every(([, ok]) => ok), checks: Object.fromEntries(entries) };
  }
}

async function withTimeout(check: ReadinessCheck, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      check().catch(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
