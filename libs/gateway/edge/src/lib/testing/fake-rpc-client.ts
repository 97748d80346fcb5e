import { Metadata } from '@grpc/grpc-js';
import { firstValueFrom, Observable, of } from 'rxjs';
import { RpcClient } from '@parley/rpc';

/**
 * For a controller's unit spec: an RpcClient of service `S` (cast to the controller's client class `C`) answering
 * each method from `answers` and recording the last request each method was given.
 */
export function fakeRpcClient<S extends object, C extends RpcClient<S>>(answers: Partial<Record<keyof S, unknown>>) {
  const requests: Partial<Record<keyof S, unknown>> = {};
  const service = new Proxy({} as S, {
    get: (_t, method) => (request: unknown) => {
      requests[method as keyof S] = request;
      return of(answers[method as keyof S]);
    },
  });
  const client = {
    call: <R>(_method: string, invoke: (s: S, md: Metadata) => Observable<R>) => firstValueFrom(invoke(service, new Metadata())),
  } as unknown as C;
  return { client, requests };
}
