import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';

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

export function newRequestId(): string {
  return `req_${randomBytes(12).toString('base64url')}`;
}

const REQUEST_ID_SHAPE = /^[A-Za-z0-9_.:-]{1,128}$/;

/** Accepts a caller-supplied request id only when it is short and plain, so logs cannot be forged through it. */
export function acceptRequestId(candidate: unknown): string {
  return typeof candidate === 'string' && REQUEST_ID_SHAPE.test(candidate) ? candidate : newRequestId();
}
