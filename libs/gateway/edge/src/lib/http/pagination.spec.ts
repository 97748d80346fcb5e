import { AppError } from '@parley/rpc';
import { CursorCodec, parseListQuery } from './pagination';

const SECRET = 'unit-test-secret-key-0123456789abcdef';

/** Runs `fn`, expecting it to throw an AppError, and returns it. */
function appError(fn: () => unknown): AppError {
  try {
    fn();
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('expected an AppError');
}

function expectRefusedCursor(fn: () => unknown): void {
  const error = appError(fn);
  expect(error.code).toBe('validation_error');
  expect(error.status).toBe(422);
  expect(error.errors).toEqual([{ field: 'starting_after', message: expect.any(String) }]);
  expect(error.errors?.[0].field.startsWith('starting_after')).toBe(true);
}

/** Flips one character of `s` at `index` to another base64url character. */
function flip(s: string, index: number): string {
  const replacement = s[index] === 'A' ? 'B' : 'A';
  return s.slice(0, index) + replacement + s.slice(index + 1);
}

describe('CursorCodec', () => {
  const codec = new CursorCodec(SECRET);

  it('decodes the position it encoded', () => {
    const cursor = codec.encode('agents', 'acc_1', '2024-01-01T00:00:00Z|agt_123');

    expect(codec.decode('agents', 'acc_1', cursor)).toBe('2024-01-01T00:00:00Z|agt_123');
  });

  it('round-trips positions with any characters, including dots and unicode', () => {
    for (const position of ['', 'a.b.c', 'ünïcödé ✓', '{"json":true}', 'x'.repeat(500)]) {
      expect(codec.decode('agents', 'acc_1', codec.encode('agents', 'acc_1', position))).toBe(position);
    }
  });

  it('issues opaque, URL-safe cursors', () => {
    const cursor = codec.encode('agents', 'acc_1', 'agt_123');

    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{32}$/);
    expect(cursor).not.toContain('agt_123');
  });

  it('refuses a cursor whose body was altered', () => {
    const cursor = codec.encode('agents', 'acc_1', 'agt_123');
    const [body, mac] = cursor.split('.');
    const forgedBody = Buffer.from(JSON.stringify({ l: 'agents', p: 'agt_999' })).toString('base64url');

    expectRefusedCursor(() => codec.decode('agents', 'acc_1', `${forgedBody}.${mac}`));
    expectRefusedCursor(() => codec.decode('agents', 'acc_1', `${flip(body, 2)}.${mac}`));
  });

  it('refuses a cursor whose signature was altered', () => {
    const [body, mac] = codec.encode('agents', 'acc_1', 'agt_123').split('.');

    expectRefusedCursor(() => codec.decode('agents', 'acc_1', `${body}.${flip(mac, 0)}`));
    expectRefusedCursor(() => codec.decode('agents', 'acc_1', `${body}.${flip(mac, mac.length - 1)}`));
    expectRefusedCursor(() => codec.decode('agents', 'acc_1', `${body}.${mac.slice(1)}`));
    expectRefusedCursor(() => codec.decode('agents', 'acc_1', `${body}.${mac}x`));
  });

  it('refuses a cursor issued to another account', () => {
    const cursor = codec.encode('agents', 'acc_1', 'agt_123');

    expectRefusedCursor(() => codec.decode('agents', 'acc_2', cursor));
  });

  it('refuses a cursor issued for another list', () => {
    const cursor = codec.encode('calls', 'acc_1', 'call_123');

    expectRefusedCursor(() => codec.decode('agents', 'acc_1', cursor));
  });

  it('refuses a cursor signed with another secret', () => {
    const cursor = new CursorCodec('another-deployment-secret-0123456789').encode('agents', 'acc_1', 'agt_123');

    expectRefusedCursor(() => codec.decode('agents', 'acc_1', cursor));
  });

  it('refuses strings that are not cursors at all', () => {
    const cursor = codec.encode('agents', 'acc_1', 'agt_123');

    for (const garbage of ['', 'abc', '.', 'abc.', '.abc', `${cursor}.extra`, 'a.b.c', '💥.💥']) {
      expectRefusedCursor(() => codec.decode('agents', 'acc_1', garbage));
    }
  });
});

describe('parseListQuery', () => {
  const noCursor = () => {
    throw new Error('the cursor should not be decoded');
  };

  it('defaults the limit to 20 with no cursor', () => {
    expect(parseListQuery({}, noCursor)).toEqual({ limit: 20, after: '' });
  });

  it.each([
    ['1', 1],
    ['20', 20],
    ['100', 100],
  ])('accepts limit=%s', (raw, limit) => {
    expect(parseListQuery({ limit: raw }, noCursor).limit).toBe(limit);
  });

  it.each(['0', '101', 'abc', '1.5', '-1', '', ' 5', '1e2', '1000'])('refuses limit=%p with invalid_request', (raw) => {
    const error = appError(() => parseListQuery({ limit: raw }, noCursor));

    expect(error.code).toBe('invalid_request');
    expect(error.status).toBe(400);
    expect(error.message).toBe('limit must be an integer from 1 to 100.');
  });

  it('decodes starting_after through the given decoder', () => {
    const decode = jest.fn((cursor: string) => `position-of-${cursor}`);

    expect(parseListQuery({ limit: '5', starting_after: 'abc.def' }, decode)).toEqual({ limit: 5, after: 'position-of-abc.def' });
    expect(decode).toHaveBeenCalledWith('abc.def');
  });

  it('ignores an empty starting_after', () => {
    expect(parseListQuery({ starting_after: '' }, noCursor)).toEqual({ limit: 20, after: '' });
  });

  it('lets a refused cursor through as the decoder raised it', () => {
    const codec = new CursorCodec(SECRET);

    expectRefusedCursor(() => parseListQuery({ starting_after: 'forged.cursor' }, (c) => codec.decode('agents', 'acc_1', c)));
  });
});
