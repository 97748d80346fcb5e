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
});
