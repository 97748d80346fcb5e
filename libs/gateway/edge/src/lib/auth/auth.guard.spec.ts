import 'reflect-metadata';
import { Metadata } from '@grpc/grpc-js';
import { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { firstValueFrom, Observable, of, throwError } from 'rxjs';
import { callsV1 } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { CallsClient } from '../calls/calls.client';
import { ApiKeysRepository, Principal } from './api-keys.repository';
import { AuthGuard, ConsoleTokenAllowed } from './auth.guard';
import { RequirePermission } from './permissions';

const API_KEY = 'vsk_test_0123456789abcdef';
const CONSOLE_TOKEN = `rtk_${'e'.repeat(40)}.${'m'.repeat(43)}`;
const EXPIRED_TOKEN = `rtk_${'x'.repeat(40)}.${'m'.repeat(43)}`;

class Routes {
  @ConsoleTokenAllowed()
  @RequirePermission('calls:read')
  ringing(): string {
    return 'ringing';
  }

  @ConsoleTokenAllowed('only')
  @RequirePermission('calls:read')
  refresh(): string {
    return 'refresh';
  }

  @RequirePermission('calls:read')
  listCalls(): string {
    return 'listCalls';
  }

  @ConsoleTokenAllowed()
  @RequirePermission('agents:read')
  agents(): string {
    return 'agents';
  }
}

function guard() {
  const keys = { authenticate: async (key: string) => (key === API_KEY ? ({ accountId: 'acme', role: 'member', keyId: 'key_1' } as Principal) : undefined) } as ApiKeysRepository;
  const service = {
    verifyConsoleToken: (req: callsV1.VerifyConsoleTokenRequest): Observable<callsV1.VerifyConsoleTokenResponse> =>
      req.token === CONSOLE_TOKEN
        ? of({ account_id: 'acme', operator: 'alice', session_expires_at: '2026-11-25T18:00:00.000Z' })
        : throwError(() => new AppError('unauthenticated', 'The console token is invalid or expired.')),
  } as unknown as callsV1.CallsServiceClient;
  const calls = { call: <R>(_m: string, invoke: (s: callsV1.CallsServiceClient, md: Metadata) => Observable<R>) => firstValueFrom(invoke(service, new Metadata())) } as unknown as CallsClient;
  return new AuthGuard(new Reflector(), keys, calls);
}

async function authenticate(route: keyof Routes, authorization: string | undefined, url = '/v1/x'): Promise<Principal | AppError> {
  const request = { url, headers: authorization ? { authorization } : {} } as { url: string; headers: Record<string, string>; principal?: Principal };
  const context = {
    getHandler: () => Routes.prototype[route],
    getClass: () => Routes,
    switchToHttp: () => ({ getRequest: () => request }),
  } as unknown as ExecutionContext;
  try {
    await guard().canActivate(context);
    return request.principal as Principal;
  } catch (error) {
    return error as AppError;
  }
}

describe('AuthGuard with operator console tokens', () => {
  it('takes a console token on a route marked for it: a principal of its account, with its operator and session end', async () => {
    expect(await authenticate('ringing', `Bearer ${CONSOLE_TOKEN}`)).toEqual({
      accountId: 'acme',
      role: 'member',
      keyId: '',
      operator: 'alice',
      sessionExpiresAt: new Date('2026-11-25T18:00:00.000Z'),
    });
    expect(await authenticate('ringing', `Bearer ${API_KEY}`)).toMatchObject({ accountId: 'acme', keyId: 'key_1' });
  });

  it('refuses a console token (401) on every other route, saying what it opens', async () => {
    expect(await authenticate('listCalls', `Bearer ${CONSOLE_TOKEN}`)).toMatchObject({
      code: 'unauthenticated',
      message: expect.stringContaining('only opens the ringing stream, claims calls and refreshes itself'),
    });
  });

  it('refuses an invalid or expired console token (401)', async () => {
    expect(await authenticate('ringing', `Bearer ${EXPIRED_TOKEN}`)).toMatchObject({ code: 'unauthenticated' });
  });

  it('gives a console token calls:read and calls:write only (403 naming any other permission)', async () => {
    expect(await authenticate('agents', `Bearer ${CONSOLE_TOKEN}`)).toMatchObject({ code: 'permission_denied', message: expect.stringContaining('agents:read') });
  });

  it('refuses an API key on a console-only route (401) with a clear message', async () => {
    expect(await authenticate('refresh', `Bearer ${API_KEY}`)).toMatchObject({ code: 'unauthenticated', message: expect.stringContaining('console') });
    expect(await authenticate('refresh', `Bearer ${CONSOLE_TOKEN}`)).toMatchObject({ operator: 'alice' });
  });

  it('still refuses any token in the query string', async () => {
    expect(await authenticate('ringing', `Bearer ${CONSOLE_TOKEN}`, `/v1/calls/ringing?t=${CONSOLE_TOKEN}`)).toMatchObject({ code: 'unauthenticated' });
    expect(await authenticate('ringing', `Bearer ${CONSOLE_TOKEN}`, `/v1/calls/ringing?token=abc`)).toMatchObject({ code: 'unauthenticated' });
  });
});
