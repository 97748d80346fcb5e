/**
 * True when `error` says the database could not be reached or dropped the connection — an outage, not a fault of
 * the request: the server refused or reset the connection, it is shutting down or starting (SQLSTATE class 08
 * connection exceptions, 57P01-57P03), the pool gave up waiting for a connection, or the connection ended under a
 * query. TypeORM wraps driver errors (`driverError`), Node wraps causes (`cause`) and a refused dual-stack connect
 * is an AggregateError (`errors`): all are looked through.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 4) return false;
  const e = error as { code?: unknown; message?: unknown; driverError?: unknown; cause?: unknown; errors?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (CONNECTION_ERROR_CODES.has(code) || code.startsWith('08')) return true;
  if (typeof e.message === 'string' && CONNECTION_MESSAGES.some((m) => m.test(e.message as string))) return true;
  const nested = [e.driverError, e.cause, ...(Array.isArray(e.errors) ? e.errors : [])];
  return nested.some((n) => n !== error && isDatabaseUnavailable(n, depth + 1));
}

const CONNECTION_ERROR_CODES = new Set([
  // Node socket errors while connecting or talking to the server.
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // PostgreSQL: admin_shutdown, crash_shutdown, cannot_connect_now (starting up or shutting down).
  '57P01',
  '57P02',
  '57P03',
]);

// node-postgres and pg-pool report these without a code.
const CONNECTION_MESSAGES = [
  /^Connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /^Client has encountered a connection error and is not queryable/i,
  /^Connection ended unexpectedly/i,
];
