// Ports for the processes a bench starts, as libs/testing's freePort (see its comment): below the kernel's ephemeral
// range, where an outgoing connection's source port cannot take one between the check and the child's bind.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

const LOWEST = 10_000;
const issued = new Set();

function ephemeralStart() {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > LOWEST + 1000) return low;
  } catch {
    // Not Linux: 32768 is below both Linux's and the IANA ephemeral ranges.
  }
  return 32_768;
}

function bindable(port, host) {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', (error) =>
      error.code === 'EAFNOSUPPORT' || error.code === 'EADDRNOTAVAIL' ? resolve(bindable(port, '0.0.0.0')) : resolve(false),
    );
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A TCP port that nothing listens on now, never one this process handed out before. */
export async function freePort() {
  const top = ephemeralStart();
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * (top - LOWEST));
    if (issued.has(port)) continue;
    issued.add(port);
    if (await bindable(port, '::')) return port;
  }
  throw new Error(`no free port found between ${LOWEST} and ${top - 1}`);
}

/** n distinct free ports. */
export const freePorts = (n) => Promise.all(Array.from({ length: n }, freePort));
