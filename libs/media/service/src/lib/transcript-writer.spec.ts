import { AppError } from '@parley/rpc';
import { transcriptWrites } from './media-metrics';
import { TranscriptWriter, TranscriptWriterOptions } from './transcript-writer';

const unavailable = () => new AppError('service_unavailable', 'The calls service did not answer in time; retry shortly.');

async function counted(kind: string, outcome: string): Promise<number> {
  const { values } = await transcriptWrites.get();
  return values.find((v) => v.labels.kind === kind && v.labels.outcome === outcome)?.value ?? 0;
}

/** A writer whose backoff waits are recorded and skipped (no real time passes), and whose warnings are kept. */
function setup(options: Partial<TranscriptWriterOptions> = {}) {
  const waits: number[] = [];
  const warnings: { fields: Record<string, unknown>; message: string }[] = [];
  const writer = new TranscriptWriter({
    warn: (fields, message) => void warnings.push({ fields, message }),
    sleep: async (ms) => void waits.push(ms),
    ...options,
  });
  return { writer, waits, warnings };
}

/** A calls service seen through the writer: records every attempt, fails the ones `fail` picks. */
function service(fail: (name: string, attempt: number) => Error | undefined = () => undefined, latencyMs = 0) {
  const attempts: string[] = [];
  const stored: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const send = (name: string) => async () => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const attempt = attempts.filter((a) => a === name).length;
    attempts.push(name);
    await new Promise((r) => setTimeout(r, latencyMs));
    inFlight--;
    const error = fail(name, attempt);
    if (error) throw error;
    stored.push(name);
  };
  return { send, attempts, stored, maxInFlight: () => maxInFlight };
}

describe('the transcript writer', () => {
  it('sends entries one at a time, in the order they were added', async () => {
    const { writer } = setup();
    const calls = service(undefined, 5);
    for (const name of ['t1', 't2', 'tool', 't3']) writer.add(name === 'tool' ? 'tool_call' : 'turn', calls.send(name));
    expect(await writer.flush()).toBe(0);
    expect(calls.stored).toEqual(['t1', 't2', 'tool', 't3']);
    expect(calls.maxInFlight()).toBe(1);
    expect(writer.pending).toBe(0);
  });

  it('retries a transient failure with growing, capped backoff, keeping every later entry behind it', async () => {
    const { writer, waits, warnings } = setup({ backoffMs: 100, maxBackoffMs: 500 });
    const retriedBefore = await counted('turn', 'retried');
    const calls = service((name, attempt) => (name === 't1' && attempt < 5 ? unavailable() : undefined));
    writer.add('turn', calls.send('t1'));
    writer.add('turn', calls.send('t2'));
    writer.add('tool_call', calls.send('tool'));
    await writer.flush();

    expect(calls.attempts).toEqual(['t1', 't1', 't1', 't1', 't1', 't1', 't2', 'tool']);
    expect(calls.stored).toEqual(['t1', 't2', 'tool']);
    // Each wait is jittered within the upper half of its ceiling: 100, 200, 400, then capped at 500.
    const ceilings = [100, 200, 400, 500, 500];
    expect(waits).toHaveLength(5);
    waits.forEach((w, i) => {
      expect(w).toBeGreaterThanOrEqual(ceilings[i] / 2);
      expect(w).toBeLessThanOrEqual(ceilings[i]);
    });
    expect(await counted('turn', 'retried')).toBe(retriedBefore + 5);
    // One warning for the entry, not one per attempt.
    expect(warnings.map((w) => w.message)).toEqual(['transcript write failed; retrying']);
  });

  it('resends the very same request on a retry, so the calls service can recognise a duplicate', async () => {
    const { writer } = setup();
    const received: object[] = [];
    let first = true;
    const request = { stream_id: 'MZ1', seq: 7, turn: { role: 'user', text: 'Hello' } };
    writer.add('turn', async () => {
      received.push(structuredClone(request));
      // Stored, but the answer came after the deadline.
      if (first) {
        first = false;
        throw unavailable();
      }
    });
    await writer.flush();
    expect(received).toEqual([request, request]);
  });

  it('drops an entry the calls service refuses and goes on with the next', async () => {
    const { writer, waits, warnings } = setup();
    const refusedBefore = await counted('tool_call', 'refused');
    const calls = service((name) => (name === 'tool' ? new AppError('not_found', 'No such call.') : undefined));
    writer.add('tool_call', calls.send('tool'));
    writer.add('turn', calls.send('t1'));
    await writer.flush();
    expect(calls.attempts).toEqual(['tool', 't1']);
    expect(calls.stored).toEqual(['t1']);
    expect(waits).toEqual([]);
    expect(await counted('tool_call', 'refused')).toBe(refusedBefore + 1);
    expect(warnings[0]).toMatchObject({ fields: { kind: 'tool_call' }, message: 'transcript entry refused by the calls service; not recorded' });
  });

  it('gives up what is left at the flush bound: logged with its count, counted, and nothing sent after', async () => {
    // Real backoff waits here: the flush bound must cut one short.
    const { writer, warnings } = setup({ flushMs: 300, backoffMs: 50, maxBackoffMs: 50, sleep: undefined });
    const givenUpBefore = await counted('turn', 'given_up');
    const calls = service((name) => (name === 't2' ? unavailable() : undefined));
    writer.add('turn', calls.send('t1'));
    writer.add('turn', calls.send('t2'));
    writer.add('turn', calls.send('t3'));
    writer.add('tool_call', calls.send('tool'));

    const started = Date.now();
    expect(await writer.flush()).toBe(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(calls.stored).toEqual(['t1']);
    expect(warnings.at(-1)).toEqual({
      fields: { count: 3, turn: 2, tool_call: 1 },
      message: 'transcript entries not recorded: the calls service did not take them in time',
    });
    expect(await counted('turn', 'given_up')).toBe(givenUpBefore + 2);

    const attempts = calls.attempts.length;
    writer.add('turn', calls.send('t4'));
    await new Promise((r) => setTimeout(r, 200));
    expect(calls.attempts).toHaveLength(attempts);
    expect(await counted('turn', 'given_up')).toBe(givenUpBefore + 3);
  });

  it('flushes at once when nothing is buffered', async () => {
    const { writer } = setup({ flushMs: 60_000 });
    expect(await writer.flush()).toBe(0);
  });
});
