import { LIVE, MediaLoadReport } from '@parley/contracts';
import { InProcessBus } from '@parley/messaging';
import { MediaLoadReporter } from './media-load-reporter';

describe('MediaLoadReporter: the worker’s load to call admission, over the bus', () => {
  it('reports its streams, capacity and event-loop utilization at start and every interval, and draining when it stops', async () => {
    const bus = new InProcessBus();
    bus.open();
    const heard: MediaLoadReport[] = [];
    await bus.listen(LIVE.mediaLoad.name, (payload) => void heard.push(payload as MediaLoadReport));
    let streams = 2;
    const reporter = new MediaLoadReporter(bus, () => streams, { MEDIA_WORKER_CAPACITY: 40, MEDIA_LOAD_REPORT_MS: 100 });

    reporter.start();
    streams = 3;
    for (const deadline = Date.now() + 5000; heard.length < 3 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
    reporter.stop();
    await new Promise((r) => setImmediate(r));

    expect(heard[0]).toMatchObject({ streams: 2, capacity: 40, draining: false, report_every_ms: 100, worker_id: expect.stringContaining(`/${process.pid}`) });
    expect(heard[1]).toMatchObject({ streams: 3, draining: false });
    for (const report of heard) expect(report.event_loop_utilization).toBeGreaterThanOrEqual(0);
    for (const report of heard) expect(report.event_loop_utilization).toBeLessThanOrEqual(1);
    expect(heard[heard.length - 1]).toMatchObject({ streams: 3, draining: true });
    const count = heard.length;
    await new Promise((r) => setTimeout(r, 250));
    expect(heard).toHaveLength(count);
  });

  it('measures utilization over the last three intervals, so one busy second after quiet ones is not a full load', () => {
    const bus = new InProcessBus();
    // The event loop's totals, advanced 1000 ms per interval with `busy` ms of it active.
    let totals = { idle: 0, active: 0, utilization: 0 };
    const pass = (busy: number) => (totals = { idle: totals.idle + 1000 - busy, active: totals.active + busy, utilization: 0 });
    const reporter = new MediaLoadReporter(bus, () => 0, { MEDIA_WORKER_CAPACITY: 40, MEDIA_LOAD_REPORT_MS: 1000 }, () => totals);
    const utilization = (busy: number) => {
      pass(busy);
      return reporter.report(false).event_loop_utilization;
    };

    expect(utilization(200)).toBeCloseTo(0.2);
    expect(utilization(200)).toBeCloseTo(0.2);
    // A second of call set-ups.
    expect(utilization(1000)).toBeCloseTo(1400 / 3000);
    // Sustained load shows in full once it fills the window.
    expect(utilization(1000)).toBeCloseTo(2200 / 3000);
    expect(utilization(1000)).toBeCloseTo(1);
    expect(utilization(0)).toBeCloseTo(2 / 3);
  });
});
