import { GroupCommit } from './group-commit';

describe('GroupCommit', () => {
  it('writes the items added in one turn as one batch and resolves each with its own result', async () => {
    const batches: number[][] = [];
    const commit = new GroupCommit<number, number>(async (items) => {
      batches.push(items);
      return items.map((n) => n * 10);
    });

    const results = await Promise.all([1, 2, 3].map((n) => commit.add(n)));

    expect(results).toEqual([10, 20, 30]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('gathers the items added while a write runs into the next write, in order, never overlapping', async () => {
    const batches: number[][] = [];
    let running = 0;
    let maxRunning = 0;
    let release!: () => void;
    const firstWriteHeld = new Promise<void>((r) => (release = r));
    const commit = new GroupCommit<number>(async (items) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      batches.push(items);
      if (batches.length === 1) await firstWriteHeld;
      running--;
      return items.map(() => undefined);
    });

    const first = commit.add(1);
    await new Promise((r) => setImmediate(r));
    const later = [2, 3, 4].map((n) => commit.add(n));
    release();
    await Promise.all([first, ...later]);

    expect(batches).toEqual([[1], [2, 3, 4]]);
    expect(maxRunning).toBe(1);
  });

  it('splits batches at the maximum size', async () => {
    const sizes: number[] = [];
    const commit = new GroupCommit<number>(async (items) => {
      sizes.push(items.length);
      return items.map(() => undefined);
    }, 2);

    await Promise.all([1, 2, 3, 4, 5].map((n) => commit.add(n)));

    expect(sizes).toEqual([2, 2, 1]);
  });

  it('retries a failed batch item by item, so only the bad item fails', async () => {
    const commit = new GroupCommit<number, string>(async (items) => {
      if (items.includes(2)) throw new Error(`bad batch ${items.join(',')}`);
      return items.map((n) => `ok ${n}`);
    });

    const results = await Promise.allSettled([1, 2, 3].map((n) => commit.add(n)));

    expect(results).toEqual([
      { status: 'fulfilled', value: 'ok 1' },
      { status: 'rejected', reason: new Error('bad batch 2') },
      { status: 'fulfilled', value: 'ok 3' },
    ]);
  });

  it('tells when everything added so far is written', async () => {
    const written: number[] = [];
    const commit = new GroupCommit<number>(async (items) => {
      await new Promise((r) => setTimeout(r, 5));
      written.push(...items);
      return items.map(() => undefined);
    });

    void commit.add(1);
    void commit.add(2);
    await commit.flushed();

    expect(written).toEqual([1, 2]);
  });
});
