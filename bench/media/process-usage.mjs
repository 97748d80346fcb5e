// CPU and memory of the process that carries the audio, found by who listens on MEDIA_PORT (Linux /proc): in
// standalone mode that may be the one process or a child it runs the media worker in; distributed, the worker. And
// the CPU of the rest of the platform and of the database's processes beside it.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

const CLOCK_TICKS = 100; // USER_HZ: /proc/<pid>/stat counts CPU time in hundredths of a second on Linux

/** The pid of the process with a socket listening on 127.0.0.1/0.0.0.0/:: `port`, or undefined. */
export function pidListeningOn(port) {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex; state 0A is LISTEN; column 9 is the socket's inode.
      if (cols.length > 9 && cols[1].endsWith(`:${hex}`) && cols[3] === '0A') inodes.add(cols[9]);
    }
  }
  if (!inodes.size) return undefined;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let fds;
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m && inodes.has(m[1])) return Number(pid);
      } catch {
        // the fd closed meanwhile
      }
    }
  }
  return undefined;
}

/** CPU seconds (user + system) in a /proc `stat` file (a process's, or one of its threads'). */
function cpuSecondsIn(statPath) {
  const stat = readFileSync(statPath, 'utf8');
  // Fields after the command name (which may contain spaces) start at state: utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** CPU seconds (user + system) and resident memory (MB) of `pid` now. */
export function usageOf(pid) {
  const cpuSeconds = cpuSecondsIn(`/proc/${pid}/stat`);
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return { cpuSeconds, rssMb: rssKb / 1024 };
}

/**
 * Each thread of `pid` now: its name (`main` for the process's own thread; otherwise its `comm`: WorkerThread for a
 * worker thread such as the media worker's stream thread, V8Worker for V8's GC and compiler helpers), CPU seconds
 * (user + system) and voluntary context switches (how often it slept and was woken), by thread id.
 */
export function threadsOf(pid) {
  const threads = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const wakeUps = Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8'))?.[1] ?? 0);
      // Other threads may be called MainThread too (a worker's own, idle): the process's is the one whose id is its pid.
      const name = tid === String(pid) ? 'main' : readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      threads.set(tid, { name, cpuSeconds: cpuSecondsIn(`/proc/${pid}/task/${tid}/stat`), wakeUps });
    } catch {
      // the thread ended
    }
  }
  return threads;
}

/**
 * Between two threadsOf samples `seconds` apart: CPU % of a core and wake-ups a second by thread name (threads of one
 * name together, busiest first); a thread started in between counts whole.
 */
export function threadUsage(before, after, seconds) {
  const byName = new Map();
  for (const [tid, to] of after) {
    const from = before.get(tid) ?? { cpuSeconds: 0, wakeUps: 0 };
    const sum = byName.get(to.name) ?? { name: to.name, threads: 0, cpu: 0, wakeUps: 0 };
    sum.threads++;
    sum.cpu += ((to.cpuSeconds - from.cpuSeconds) / seconds) * 100;
    sum.wakeUps += (to.wakeUps - from.wakeUps) / seconds;
    byName.set(to.name, sum);
  }
  return [...byName.values()].sort((a, b) => b.cpu - a.cpu);
}

/** The command line of `pid`, shortened to what names it (the script, or the executable). */
export function commandOf(pid) {
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  return argv.slice(1).find((a) => !a.startsWith('-'))?.replace(/^.*\/(apps\/[^/]+)\/.*$/, '$1') ?? argv[0];
}

/** CPU seconds of each of `pids` now; a pid that is gone is left out. */
export function cpuSecondsOf(pids) {
  const seconds = new Map();
  for (const pid of pids) {
    try {
      seconds.set(pid, usageOf(pid).cpuSeconds);
    } catch {
      // exited
    }
  }
  return seconds;
}

/** The pids of this machine's PostgreSQL processes (the embedded server's, or the server a run uses). */
export function postgresPids() {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    });
}

/** CPU % of one core used by a set of processes between two cpuSecondsOf samples `seconds` apart; a process started in between counts whole. */
export function cpuPercent(before, after, seconds) {
  let used = 0;
  for (const [pid, to] of after) used += to - (before.get(pid) ?? 0);
  return (used / seconds) * 100;
}
