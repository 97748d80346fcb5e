import { LIVE, MediaLoadReport } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { InProcessBus } from '@parley/messaging';
import { CallAdmission, decideAdmission, MediaWorkerLoad } from './call-admission';
import { CallsRepository } from './calls.repository';

const worker = (load: Partial<MediaWorkerLoad> = {}): MediaWorkerLoad => ({ streams: 0, capacity: 10, event_loop_utilization: 0.2, draining: false, ...load });

describe('decideAdmission: can the media plane carry one more call', () => {
  const decide = (workers: MediaWorkerLoad[], reserved = 0, workersEverSeen = workers.length > 0) =>
    decideAdmission({ workers, workersEverSeen, reserved, maxLoad: 0.85 });

  it('admits while accepting workers have streams free beyond the calls already placed', () => {
    expect(decide([worker({ streams: 4 }), worker({ streams: 9 })], 5)).toEqual({ admit: true, free: 2 });
  });

  it('counts placed but unanswered calls against capacity: they may need a stream any moment', () => {
    expect(decide([worker({ streams: 6 })], 4)).toMatchObject({ admit: false, reason: 'media_capacity', free: 0 });
    expect(decide([worker({ streams: 12 })], 0)).toMatchObject({ admit: false, reason: 'media_capacity' });
  });

  it('leaves out the capacity of a worker whose event loop is past the limit, and refuses when every worker is', () => {
    expect(decide([worker({ event_loop_utilization: 0.95 }), worker({ streams: 9 })], 0)).toEqual({ admit: true, free: 1 });
    expect(decide([worker({ event_loop_utilization: 0.95 }), worker({ streams: 9 })], 1)).toMatchObject({ admit: false, reason: 'media_capacity' });
    expect(decide([worker({ event_loop_utilization: 0.9 })])).toMatchObject({ admit: false, reason: 'media_load' });
  });

  it('refuses when every worker is draining or none reports any more, and admits when none ever reported', () => {
    expect(decide([worker({ draining: true })])).toMatchObject({ admit: false, reason: 'no_media_worker' });
    expect(decide([], 0, true)).toMatchObject({ admit: false, reason: 'no_media_worker' });
    expect(decide([], 50, false)).toEqual({ admit: true, free: undefined });
  });
});

describe('CallAdmission: refusals before dialling, with Retry-After', () => {
  let pending = 0;
  // The count of placed calls takes a moment, as a query does: set-ups may be recorded while it runs.
  const calls = {
    countPlacedNotAnswered: async () => {
      const seen = pending;
      await new Promise((r) => setTimeout(r, 5));
      return seen;
    },
  } as unknown as CallsRepository;
  const report = (load: Partial<MediaLoadReport> = {}): MediaLoadReport => ({
    worker_id: 'w1',
    streams: 0,
    capacity: 3,
    event_loop_utilization: 0.1,
    draining: false,
    report_every_ms: 1000,
    ...load,
  });

  async function start(config: Partial<ServiceConfig> = {}) {
    const bus = new InProcessBus();
    bus.open();
    const admission = new CallAdmission(bus, calls, Object.assign(new ServiceConfig(), config));
    await admission.onApplicationBootstrap();
    return { bus, admission };
  }

  beforeEach(() => (pending = 0));

  it('hears media workers on the bus and refuses once live streams, placed calls and set-ups in progress fill them', async () => {
    const { bus, admission } = await start();
    await bus.broadcast(LIVE.mediaLoad.name, report({ streams: 1 }));
    pending = 1;
    const ticket = await admission.admit(Date.now() + 5000);
    // One stream, one placed call, one set-up not yet recorded: the worker's three are taken.
    await expect(admission.admit(Date.now() + 5000)).rejects.toMatchObject({
      code: 'service_unavailable',
      extra: { retry_after_seconds: 5 },
      message: expect.stringContaining('Nothing was dialled'),
    });
    // Recorded, the call is counted by the database instead of by the ticket.
    ticket.recorded();
    pending = 1;
    await expect(admission.admit(Date.now() + 5000)).resolves.toBeDefined();
    admission.onApplicationShutdown();
  });

  it('never admits beyond capacity under concurrent set-ups, even as admitted calls are recorded meanwhile', async () => {
    const { admission } = await start({ CALL_SETUP_CONCURRENCY: 50 });
    admission.observe(report({ capacity: 5 }));
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, async () => {
        const ticket = await admission.admit(Date.now() + 5000);
        pending += 1;
        ticket.recorded();
      }),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(5);
    expect(pending).toBe(5);
  });

  it('stops counting a worker whose reports stopped, and then refuses: its calls could not be answered', async () => {
    const { admission } = await start();
    admission.observe(report(), Date.now() - 10_000);
    await expect(admission.admit(Date.now() + 5000)).rejects.toMatchObject({ extra: { retry_after_seconds: 5 }, message: expect.stringContaining('No media worker') });
  });

  it('refuses a set-up that would wait in the queue past its budget, and one whose deadline has passed', async () => {
    const { admission } = await start({ CALL_SETUP_CONCURRENCY: 1, CALL_SETUP_QUEUE_MS: 50 });
    const first = await admission.admit(Date.now() + 5000);
    await expect(admission.admit(Date.now() + 5000)).rejects.toMatchObject({ extra: { retry_after_seconds: 1 }, message: expect.stringContaining('set up at once') });
    first.release();
    await expect(admission.admit(Date.now() - 1)).rejects.toMatchObject({ message: expect.stringContaining('deadline') });
    await expect(admission.admit(Date.now() + 5000)).resolves.toBeDefined();
  });
});
