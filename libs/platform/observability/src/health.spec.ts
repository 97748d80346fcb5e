import { HealthRegistry } from './health';

describe('HealthRegistry', () => {
  it('is ready when every check answers true, and names the checks', async () => {
    const health = new HealthRegistry();
    health.register('database', async () => true);
    health.register('bus', async () => true);
    expect(await health.readiness()).toEqual({ ready: true, checks: { database: true, bus: true } });
  });

  it('is not ready when a check fails, throws or does not answer in time', async () => {
    const health = new HealthRegistry();
    health.register('database', async () => true);
    health.register('bus', async () => Promise.reject(new Error('down')));
    health.register('slow', () => new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 200)));
    expect(await health.readiness(20)).toEqual({ ready: false, checks: { database: true, bus: false, slow: false } });
  });

  it('answers not ready at once and for good once the service is stopping, without asking its dependencies', async () => {
    const health = new HealthRegistry();
    const check = jest.fn(async () => true);
    health.register('database', check);
    health.markStopping();
    const started = Date.now();
    expect(await health.readiness()).toEqual({ ready: false, checks: {}, stopping: true });
    expect(Date.now() - started).toBeLessThan(50);
    expect(check).not.toHaveBeenCalled();
  });
});
