import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/*
 * Ports handed to child processes are taken below the kernel's ephemeral range. A port from that range, free when
 * checked, can become any outgoing connection's source port before the child binds it: CI lost a media worker's ops
 * port that way (EADDRINUSE). Below the range only another listener competes, so a port is checked by binding it,
 * each jest worker draws from a slice of its own, and a port handed out is not handed out again by this module
 * (jest gives each test file its own: across files, the bind check finds what an earlier file left listening).
 */
const LOWEST = 10_000;
const SLICES = 8;
const issued = new Set<number>();

function ephemeralStart(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > LOWEST + SLICES * 100) return low;
  } catch {
    // Not Linux: 32768 is below both Linux's and the IANA ephemeral ranges.
  }
  return 32_768;
}

function slice(): { from: number; size: number } {
  const size = Math.floor((ephemeralStart() - LOWEST) / SLICES);
  const worker = (Number(process.env['JEST_WORKER_ID'] ?? 1) - 1) % SLICES;
  return { from: LOWEST + Math.max(0, worker) * size, size };
}

/** Whether nothing listens on the port, on any address (the services bind 127.0.0.1 or every address). */
function bindable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) =>
      // Without IPv6 the wildcard check falls back to IPv4's.
      error.code === 'EAFNOSUPPORT' || error.code === 'EADDRNOTAVAIL' ? resolve(bindable(port, '0.0.0.0')) : resolve(false),
    );
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A TCP port that nothing listens on now, for a process this one is about to start. */
export async function freePort(): Promise<number> {
  const { from, size } = slice();
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = from + Math.floor(Math.random() * size);
    if (issued.has(port)) continue;
    issued.add(port);
    if (await bindable(port, '::')) return port;
  }
  throw new Error(`no free port found between ${from} and ${from + size - 1}`);
}
