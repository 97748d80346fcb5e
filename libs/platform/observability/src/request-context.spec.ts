import { acceptRequestId, currentRequestId, newRequestId, runWithRequestId } from './request-context';

describe('request ids', () => {
  it('are req_ plus 16 URL-safe characters, all different, across many refills of the random pool', () => {
    const ids = Array.from({ length: 2000 }, newRequestId);
    expect(ids.every((id) => /^req_[A-Za-z0-9_-]{16}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("keep a caller's plain id and replace one that could forge log lines", () => {
    expect(acceptRequestId('trace-42')).toBe('trace-42');
    expect(acceptRequestId('evil\nlevel=error')).toMatch(/^req_/);
    expect(acceptRequestId(undefined)).toMatch(/^req_/);
  });

  it('are visible to everything a request runs, including after awaits', async () => {
    const seen = await runWithRequestId('req_one', async () => {
      await new Promise((r) => setImmediate(r));
      return currentRequestId();
    });
    expect(seen).toBe('req_one');
    expect(currentRequestId()).toBeUndefined();
  });
});
