import { join } from 'node:path';
import { SpeechError } from './speech-error';
import { SpeechWorkerPool, SpeechWorkerPoolOptions } from './speech-worker-pool';
import { FakeSynthesisJob, FakeSynthesisResult, FakeSynthesisWorkerData } from './testing/fake-synthesis-worker';

const FAKE_WORKER = join(__dirname, 'testing', 'fake-synthesis-worker.ts');

describe('SpeechWorkerPool', () => {
  const pools: SpeechWorkerPool<FakeSynthesisJob, FakeSynthesisResult>[] = [];
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.close()));
  });

  function pool(options: Partial<SpeechWorkerPoolOptions> & { failStart?: (worker: number) => boolean } = {}) {
    let workers = 0;
    const created = new SpeechWorkerPool<FakeSynthesisJob, FakeSynthesisResult>({
      provider: 'local',
      entry: FAKE_WORKER,
      workerData: (): FakeSynthesisWorkerData => ({ worker: ++workers, failStart: options.failStart?.(workers) }),
      size: 1,
      recycleAfter: 40,
      deadlineMs: 2_000,
      startTimeoutMs: 30_000,
      maxQueue: 16,
      ...options,
    });
    pools.push(created);
    return created;
  }
  const live = () => new AbortController().signal;

  it('retires each worker after the configured number of lines, its successor started half way there', async () => {
    const p = pool({ recycleAfter: 4 });
    const served: FakeSynthesisResult[] = [];
    const startedAfter: number[] = [];
    for (let i = 0; i < 9; i++) {
      served.push(await p.run({ text: `line ${i}` }, live()));
      startedAfter.push(p.stats.started);
    }

    expect(served.map((r) => r.worker)).toEqual([1, 1, 1, 1, 2, 2, 2, 2, 3]);
    expect(served.map((r) => r.served)).toEqual([1, 2, 3, 4, 1, 2, 3, 4, 1]);
    // Worker 2 exists from worker 1's second line on, before worker 1 is retired after its fourth.
    expect(startedAfter.slice(0, 4)).toEqual([1, 2, 2, 2]);
    expect(p.stats).toMatchObject({ recycled: 2, failed: 0 });
  });

  it.each([
    ['throws', 'throw'],
    ['exits', 'exit'],
    ['answers with an error', 'error'],
    ['hangs past the deadline', 'hang'],
  ] as const)('replaces a worker that %s and retries its line once on a fresh worker', async (_, fail) => {
    const p = pool({ deadlineMs: 500 });

    const result = await p.run({ text: 'Hello.', fail, failOn: [1] }, live());

    expect(result).toMatchObject({ text: 'Hello.', worker: 2 });
    expect(p.stats.failed).toBe(1);
    await expect(p.run({ text: 'Next.' }, live())).resolves.toMatchObject({ worker: 2 });
  });

  it('reports a line that fails on its retry too as a SpeechError, and goes on with fresh workers', async () => {
    const p = pool();

    const error = await p.run({ text: 'Hello.', fail: 'throw' }, live()).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SpeechError);
    expect(error).toMatchObject({ code: 'invalid_response', provider: 'local' });
    expect((error as Error).message).toMatch(/crashed .*retry/);
    expect(p.stats.failed).toBe(2);
    await expect(p.run({ text: 'Next.' }, live())).resolves.toMatchObject({ worker: 3 });
  });

  it('runs lines first come, first served', async () => {
    const p = pool();
    await p.warmUp();
    const finished: string[] = [];

    await Promise.all(
      ['a', 'b', 'c', 'd', 'e'].map((text) => p.run({ text, busyMs: 20 }, live()).then((r) => finished.push(r.text))),
    );

    expect(finished).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('puts a retried line before the lines that queued after it', async () => {
    const p = pool();
    await p.warmUp();
    const finished: string[] = [];

    await Promise.all([
      p.run({ text: 'first', fail: 'exit', failOn: [1] }, live()).then((r) => finished.push(r.text)),
      p.run({ text: 'second' }, live()).then((r) => finished.push(r.text)),
    ]);

    expect(finished).toEqual(['first', 'second']);
  });

  it('drops an aborted line from the queue at once: it is never synthesized', async () => {
    const p = pool();
    await p.warmUp();
    const running = p.run({ text: 'long', busyMs: 300 }, live());
    const controller = new AbortController();
    const queued = p.run({ text: 'dropped' }, controller.signal);
    let runningDone = false;
    void running.then(() => (runningDone = true));

    controller.abort();

    await expect(queued).rejects.toMatchObject({ code: 'aborted', provider: 'local' });
    expect(runningDone).toBe(false);
    await running;
    // The worker's next line is its second: the aborted one never reached it.
    await expect(p.run({ text: 'next' }, live())).resolves.toMatchObject({ worker: 1, served: 2 });
  });

  it('rejects a running line at once when aborted, drops its result and keeps the worker', async () => {
    const p = pool();
    await p.warmUp();
    const controller = new AbortController();
    const running = p.run({ text: 'long', busyMs: 300 }, controller.signal);
    const next = p.run({ text: 'next' }, live());

    controller.abort();

    await expect(running).rejects.toMatchObject({ code: 'aborted' });
    await expect(next).resolves.toMatchObject({ text: 'next', worker: 1, served: 2 });
    expect(p.stats.failed).toBe(0);
  });

  it('refuses a line when the queue is full, without waiting', async () => {
    const p = pool({ maxQueue: 2 });
    await p.warmUp();
    const accepted = [p.run({ text: 'running', busyMs: 200 }, live())];
    await new Promise((resolve) => setImmediate(resolve)); // the first line is on the worker, out of the queue
    accepted.push(p.run({ text: 'queued 1' }, live()), p.run({ text: 'queued 2' }, live()));

    await expect(p.run({ text: 'one too many' }, live())).rejects.toMatchObject({ code: 'timeout', provider: 'local' });
    await expect(Promise.all(accepted)).resolves.toHaveLength(3);
  });

  it('never runs more lines at once than its size, even with a warm standby', async () => {
    const p = pool({ recycleAfter: 2 });
    await p.run({ text: 'first' }, live());
    await p.warmUp(); // worker 1 is half way: its successor is started and now ready

    const results = await Promise.all(['a', 'b', 'c', 'd'].map((text) => p.run({ text, busyMs: 50 }, live())));

    expect(p.stats.started).toBeGreaterThanOrEqual(2);
    const byStart = [...results].sort((x, y) => x.startedAt - y.startedAt);
    for (let i = 1; i < byStart.length; i++) expect(byStart[i].startedAt).toBeGreaterThanOrEqual(byStart[i - 1].endedAt);
  });

  it('spreads lines over `size` workers', async () => {
    const p = pool({ size: 2 });
    await p.warmUp();

    const results = await Promise.all(['a', 'b', 'c', 'd'].map((text) => p.run({ text, busyMs: 50 }, live())));

    expect(new Set(results.map((r) => r.worker))).toEqual(new Set([1, 2]));
    expect(p.stats.started).toBe(2);
  });

  it('fails waiting lines with a SpeechError when workers cannot start, and tries again on the next line', async () => {
    const p = pool({ failStart: () => true });

    await expect(p.warmUp()).rejects.toThrow('cannot load the engine');
    const error = await p.run({ text: 'Hello.' }, live()).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SpeechError);
    expect(error).toMatchObject({ code: 'invalid_response', message: expect.stringMatching(/could not start a worker/) });
  });

  it('keeps a running worker serving while its successors cannot start, then fails the lines left', async () => {
    const p = pool({ recycleAfter: 4, failStart: (worker) => worker > 1 });

    const served: FakeSynthesisResult[] = [];
    for (let i = 0; i < 4; i++) served.push(await p.run({ text: `line ${i}` }, live()));
    const error = await p.run({ text: 'after the last worker' }, live()).catch((e: unknown) => e);

    expect(served.map((r) => r.worker)).toEqual([1, 1, 1, 1]);
    expect(error).toMatchObject({ code: 'invalid_response', message: expect.stringMatching(/could not start a worker/) });
  });
});
