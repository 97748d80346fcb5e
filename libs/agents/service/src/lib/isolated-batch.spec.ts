import { readIsolated } from './isolated-batch';

/** A statement over several keys that fails as a whole when any key is 'bad', as PostgreSQL does. */
const readAll = async (keys: readonly string[]) => {
  if (keys.includes('bad')) throw new Error('invalid byte sequence for encoding "UTF8": 0x00');
  return keys.map((k) => k.toUpperCase());
};
const readOne = async (key: string) => (await readAll([key]))[0];

describe('readIsolated', () => {
  it('answers every key from the one statement when it succeeds', async () => {
    const single = jest.fn(readOne);

    expect(await readIsolated(['a', 'b'], readAll, single)).toEqual(['A', 'B']);
    expect(single).not.toHaveBeenCalled();
  });

  it('gives a failing key its own error and still answers its neighbours', async () => {
    const results = await readIsolated(['a', 'bad', 'c'], readAll, readOne);

    expect(results[0]).toBe('A');
    expect(results[1]).toBeInstanceOf(Error);
    expect((results[1] as Error).message).toMatch(/0x00/);
    expect(results[2]).toBe('C');
  });

  it('answers a lone failing key with its error without reading it twice', async () => {
    const single = jest.fn(readOne);

    const [result] = await readIsolated(['bad'], readAll, single);

    expect(result).toBeInstanceOf(Error);
    expect(single).not.toHaveBeenCalled();
  });

  it('throws when the database is unreachable, a failure every key shares', async () => {
    const down = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const single = jest.fn(readOne);

    await expect(readIsolated(['a', 'b'], () => Promise.reject(down), single)).rejects.toBe(down);
    expect(single).not.toHaveBeenCalled();
  });
});
