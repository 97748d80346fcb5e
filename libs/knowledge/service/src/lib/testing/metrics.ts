import { Counter } from 'prom-client';

/** What a counter of the knowledge metrics holds for one `outcome` (0 before any). */
export async function counted(counter: Counter<'outcome'>, outcome: string): Promise<number> {
  return (await counter.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}
