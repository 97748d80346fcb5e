import { serviceLogger } from '@parley/observability';

const log = serviceLogger('calls');

/**
 * Runs `pass` every `intervalMs` until the returned function is called. A pass never overlaps the previous one
 * (a slow database makes passes rarer, not concurrent), and a failed pass is logged and the next one runs.
 */
export function startPasses(name: string, intervalMs: number, pass: () => Promise<unknown>): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    pass()
      .catch((error: unknown) => log.warn({ err: error }, `${name} pass failed`))
      .finally(() => (running = false));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
