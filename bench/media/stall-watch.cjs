// --stalls (bench:media): preloaded into every platform process (NODE_OPTIONS --require), it notes in
// BENCH_STALL_FILE, one JSON line each, every hold of the process's main thread over HOLD_MS (a 10 ms interval's
// lateness: the thread did not return to its event loop for that long) and every major GC (a `gc` performance entry
// of kind major, with its pause). The media worker's stream thread keeps STREAM_LEAD_FRAMES of each call queued; a
// hold longer than that is heard as silence on every call at once. CommonJS, as `--require` loads it.
const { appendFileSync } = require('node:fs');
const { constants, performance, PerformanceObserver } = require('node:perf_hooks');
const { isMainThread } = require('node:worker_threads');

const FILE = process.env.BENCH_STALL_FILE;
const EVERY_MS = 10;
const HOLD_MS = 50;

if (FILE && isMainThread) {
  const note = (what) => appendFileSync(FILE, `${JSON.stringify({ pid: process.pid, ...what })}\n`);
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    const held = now - last - EVERY_MS;
    if (held > HOLD_MS) note({ hold: held, at: performance.timeOrigin + last });
    last = now;
  }, EVERY_MS).unref();
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) note({ gc: e.duration, at: performance.timeOrigin + e.startTime });
    }
  }).observe({ entryTypes: ['gc'] });
}
