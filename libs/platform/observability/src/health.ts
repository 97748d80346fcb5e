export type ReadinessCheck = () => Promise<boolean>;

export interface Readiness {
  ready: boolean;
  checks: Record<string, boolean>;
  /** Present once the service is shutting down: it answers not-ready from then on, whatever its dependencies say. */
  stopping?: true;
}

/**
 * Readiness of one service: false until every named dependency (database, bus, …) answers, and false for good once
 * the service starts shutting down (a load balancer stops sending it work while it drains). Liveness is separate
 * and only says the process is running.
 */
export class HealthRegistry {
  private readonly checks = new Map<string, ReadinessCheck>();
  private stopping = false;

  register(name: string, check: ReadinessCheck): void {
    this.checks.set(name, check);
  }

  /** The service is shutting down: not ready from now on, without asking the dependencies. */
  markStopping(): void {
    this.stopping = true;
  }

  async readiness(timeoutMs = 2000): Promise<Readiness> {
    if (this.stopping) return { ready: false, checks: {}, stopping: true };
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
