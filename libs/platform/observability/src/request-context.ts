import { AsyncLocalStorage } from 'node:async_hooks';
import { randomFillSync } from 'node:crypto';

export interface RequestContext {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` with a request id visible to logs and to outgoing gRPC and NATS hops. */
export function runWithRequestId<T>(requestId: string, fn: () => T): T {
  return storage.run({ requestId }, fn);
}

export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

const ID_BYTES = 12;
// Drawn 4 KiB at a time: one call into the CSPRNG per ~340 request ids instead of one per request.
const pool = Buffer.alloc(4096 - (4096 % ID_BYTES));
let offset = pool.length;

export function newRequestId(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  offset += ID_BYTES;
  return `req_${pool.toString('base64url', offset - ID_BYTES, offset)}`;
}

const REQUEST_ID_SHAPE = /^[A-Za-z0-9_.:-]{1,128}$/;

/** Accepts a caller-supplied request id only when it is short and plain, so logs cannot be forged through it. */
export function acceptRequestId(candidate: unknown): string {
  return typeof candidate === 'string' && REQUEST_ID_SHAPE.test(candidate) ? candidate : newRequestId();
}
