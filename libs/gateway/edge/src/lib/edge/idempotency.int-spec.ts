import 'reflect-metadata';
import { CanActivate, Controller, ExecutionContext, HttpCode, INestApplication, Post, Req } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { FastifyRequest } from 'fastify';
import { DataSource } from 'typeorm';
import { openServiceDatabase } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { Operation } from '../http/operation';
import { ProblemFilter } from '../http/problem';
import { IDEMPOTENCY_TIMING, IdempotencyStore } from './idempotency.store';
import { CreateIdempotencyAndRateLimits1763700000102, IdempotencyRetryableKeys1764100000103 } from './migrations';

/** The lease of this test's gateway: short, so a request outlives it several times within a test. */
const LEASE_SECONDS = 2;
const HOUR = 3_600_000;

let db: TestDatabase;
let dataSource: DataSource;
/** The gateway's clock, moved forward by the tests (the injected seam): the database's time plus `skewMs`. */
let skewMs = 0;
/** What the next run of the handler for a key does; each run takes the first. */
const scripts = new Map<string, Array<(key: string) => Promise<unknown>>>();
/** Dials the forwarded route's owner made (it makes one per key, deciding in its own transaction). */
const dials = new Map<string, number>();

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const keyOf = (req: FastifyRequest) => String(req.headers['idempotency-key']);

/** The side effect: a committed row of the handler's own, counted per key. */
async function effect(key: string): Promise<{ id: number }> {
  const [row]: { id: number }[] = await dataSource.query(`INSERT INTO effects (key) VALUES ($1) RETURNING id`, [key]);
  return { id: row.id };
}
const effects = async (key: string) => Number((await dataSource.query(`SELECT count(*) AS n FROM effects WHERE key = $1`, [key]))[0].n);

/** An owning service that keeps the key with what it made (as the calls service keeps it with the call). */
async function ownerCreate(key: string): Promise<{ id: number }> {
  const inserted: { id: number }[] = await dataSource.query(`INSERT INTO owned (key) VALUES ($1) ON CONFLICT (key) DO NOTHING RETURNING id`, [key]);
  if (inserted.length) dials.set(key, (dials.get(key) ?? 0) + 1);
  const [row]: { id: number }[] = await dataSource.query(`SELECT id FROM owned WHERE key = $1`, [key]);
  return { id: row.id };
}

const deadlineError = () => new AppError('service_unavailable', 'The calls service did not answer in time; retry shortly.');

@Controller('v1')
class SideEffectsController {
  private run(req: FastifyRequest, fallback: (key: string) => Promise<unknown>): Promise<unknown> {
    const key = keyOf(req);
    return (scripts.get(key)?.shift() ?? fallback)(key);
  }

  @Post('things')
  @Operation({ summary: 'Make a thing', permission: 'agents:write', idempotent: true })
  make(@Req() req: FastifyRequest): Promise<unknown> {
    return this.run(req, effect);
  }

  @Post('calls')
  @Operation({ summary: 'Place a call', permission: 'calls:write', idempotent: 'forwarded' })
  place(@Req() req: FastifyRequest): Promise<unknown> {
    return this.run(req, ownerCreate);
  }

  @Post('things/end')
  @HttpCode(200)
  @Operation({ summary: 'End a thing', permission: 'agents:write', idempotent: true })
  end(@Req() req: FastifyRequest): Promise<unknown> {
    return this.run(req, effect);
  }
}

class AccountGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    context.switchToHttp().getRequest().principal = { accountId: 'acc_1', role: 'owner', keyId: 'key_1' };
    return true;
  }
}

describe('Idempotency-Key over HTTP on real PostgreSQL: one side effect per key, whatever fails', () => {
  let app: INestApplication;

  beforeAll(async () => {
    db = await createTestDatabase('parley_idempotency');
    dataSource = await openServiceDatabase(db.url, {
      schema: 'gateway',
      entities: [],
      migrations: [CreateIdempotencyAndRateLimits1763700000102, IdempotencyRetryableKeys1764100000103],
    });
    await dataSource.query(`CREATE TABLE effects (id serial PRIMARY KEY, key text NOT NULL)`);
    await dataSource.query(`CREATE TABLE owned (id serial PRIMARY KEY, key text NOT NULL UNIQUE)`);
    // The real failure of storing an answer: the database refuses the write of keys named so.
    await dataSource.query(`
      CREATE FUNCTION refuse_store() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'disk full (injected)'; END $$`);
    await dataSource.query(`
      CREATE TRIGGER refuse_store BEFORE UPDATE ON idempotency_keys FOR EACH ROW
      WHEN (NEW.key LIKE 'unstorable-%' AND NEW.state = 'done') EXECUTE FUNCTION refuse_store()`);

    const module = await Test.createTestingModule({
      controllers: [SideEffectsController],
      providers: [
        { provide: DataSource, useValue: dataSource },
        {
          provide: IDEMPOTENCY_TIMING,
          useValue: { leaseSeconds: LEASE_SECONDS, now: () => new Date(Date.now() + skewMs) },
        },
        IdempotencyStore,
        { provide: APP_GUARD, useClass: AccountGuard },
        { provide: APP_FILTER, useClass: ProblemFilter },
      ],
    }).compile();
    app = module.createNestApplication<NestFastifyApplication>(new FastifyAdapter());
    await app.init();
    await (app as NestFastifyApplication).getHttpAdapter().getInstance().ready();
  });

  afterEach(() => {
    skewMs = 0;
  });

  afterAll(async () => {
    await app?.close();
    await dataSource?.destroy();
    await db?.drop();
  });

  const post = (url: string, key: string, payload: object = { name: 'x' }) =>
    (app as NestFastifyApplication).inject({ method: 'POST', url, headers: { 'idempotency-key': key }, payload });
  const script = (key: string, ...runs: Array<(key: string) => Promise<unknown>>) => scripts.set(key, runs);

  it('answers a success whose record cannot be stored, and never runs the key again: in flight, then interrupted', async () => {
    const first = await post('/v1/things', 'unstorable-1');
    expect(first.statusCode).toBe(201);

    const retry = await post('/v1/things', 'unstorable-1');
    expect(retry.statusCode).toBe(409);
    expect(retry.json()).toMatchObject({ code: 'idempotency_conflict', detail: expect.stringMatching(/still running/) });

    skewMs = (LEASE_SECONDS + 1) * 1000;
    const later = await post('/v1/things', 'unstorable-1');
    expect(later.statusCode).toBe(409);
    expect(later.json().detail).toMatch(/interrupted .* never run again/);
    expect(await effects('unstorable-1')).toBe(1);
  });

  it('on a forwarded route, lets the owning service answer a retry once a success could not be stored: one dial', async () => {
    const first = await post('/v1/calls', 'unstorable-call');
    expect(first.statusCode).toBe(201);

    skewMs = (LEASE_SECONDS + 1) * 1000;
    const retry = await post('/v1/calls', 'unstorable-call');
    expect(retry.statusCode).toBe(201);
    expect(retry.json()).toEqual(first.json());
    expect(dials.get('unstorable-call')).toBe(1);
  });

  it('never runs a key again after a deadline while the downstream still commits: retries hear it was interrupted', async () => {
    let committed: Promise<unknown> = Promise.resolve();
    script('deadline-1', async (key) => {
      // The peer is still working when the caller's deadline passes; it commits afterwards.
      committed = wait(300).then(() => effect(key));
      throw deadlineError();
    });

    const first = await post('/v1/things', 'deadline-1');
    expect(first.statusCode).toBe(503);
    const during = await post('/v1/things', 'deadline-1');
    await committed;
    const after = await post('/v1/things', 'deadline-1');

    for (const retry of [during, after]) {
      expect(retry.statusCode).toBe(409);
      expect(retry.json().detail).toMatch(/interrupted/);
    }
    expect(await effects('deadline-1')).toBe(1);
  });

  it('holds the key after a 500 that followed the side effect', async () => {
    script('crash-1', async (key) => {
      await effect(key);
      throw new Error('bug after the write');
    });

    expect((await post('/v1/things', 'crash-1')).statusCode).toBe(500);
    expect((await post('/v1/things', 'crash-1')).json().detail).toMatch(/interrupted/);
    expect(await effects('crash-1')).toBe(1);
  });

  it('on a forwarded route, sends the retry after a deadline to the owning service, which returns what it made: one dial', async () => {
    let committed: Promise<unknown> = Promise.resolve();
    script('deadline-call', async (key) => {
      committed = wait(300).then(() => ownerCreate(key));
      throw deadlineError();
    });

    expect((await post('/v1/calls', 'deadline-call')).statusCode).toBe(503);
    await committed;
    const retry = await post('/v1/calls', 'deadline-call');

    expect(retry.statusCode).toBe(201);
    expect(retry.json()).toEqual({ id: (await dataSource.query(`SELECT id FROM owned WHERE key = 'deadline-call'`))[0].id });
    expect(dials.get('deadline-call')).toBe(1);
  });

  it.each([
    ['/v1/things', 'long-1'],
    ['/v1/calls', 'long-call'],
  ])('renews the lease of a request running several leases long (%s): retries meanwhile are in flight, then replay', async (url, key) => {
    script(key, async (k) => {
      await wait(LEASE_SECONDS * 2500);
      return url === '/v1/calls' ? ownerCreate(k) : effect(k);
    });

    const first = post(url, key);
    await wait(LEASE_SECONDS * 1500);
    const during = await post(url, key);
    await wait(LEASE_SECONDS * 750);
    const stillDuring = await post(url, key);
    const done = await first;
    const after = await post(url, key);

    expect(done.statusCode).toBe(201);
    for (const retry of [during, stillDuring]) {
      expect(retry.statusCode).toBe(409);
      expect(retry.json().detail).toMatch(/still running/);
    }
    expect(after.statusCode).toBe(201);
    expect(after.headers['idempotency-replayed']).toBe('true');
    expect(after.body).toBe(done.body);
    expect(url === '/v1/calls' ? dials.get(key) : await effects(key)).toBe(1);
  }, 20_000);

  it('answers 409 to every request sent while the first is held in flight, and runs the key once', async () => {
    let entered!: () => void;
    let open!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const gate = new Promise<void>((resolve) => (open = resolve));
    script('inflight-1', async (key) => {
      entered();
      await gate;
      return effect(key);
    });

    const first = post('/v1/things', 'inflight-1');
    await inside;
    const concurrent = await Promise.all(Array.from({ length: 8 }, () => post('/v1/things', 'inflight-1')));
    open();
    const done = await first;

    for (const res of concurrent) {
      expect(res.statusCode).toBe(409);
      expect(res.json()).toMatchObject({ code: 'idempotency_conflict', detail: expect.stringMatching(/still running/) });
      expect(res.headers['idempotency-replayed']).toBeUndefined();
    }
    expect(done.statusCode).toBe(201);
    expect(await effects('inflight-1')).toBe(1);
  });

  it('keeps the answer for 24 hours by the injected clock, and only then takes the key as new', async () => {
    const first = await post('/v1/things/end', 'expiry-1');
    expect(first.statusCode).toBe(200);

    skewMs = 24 * HOUR - 60_000;
    const late = await post('/v1/things/end', 'expiry-1');
    expect(late.headers['idempotency-replayed']).toBe('true');
    expect(late.body).toBe(first.body);
    expect(await effects('expiry-1')).toBe(1);

    skewMs = 24 * HOUR;
    const expired = await post('/v1/things/end', 'expiry-1');
    expect(expired.statusCode).toBe(200);
    expect(expired.headers['idempotency-replayed']).toBeUndefined();
    expect(expired.json().id).not.toBe(first.json().id);
    expect(await effects('expiry-1')).toBe(2);
  });

  it('does not keep a 402 plan_limit_reached: the same key runs once the limit allows it', async () => {
    script('limit-1', async () => {
      throw new AppError('plan_limit_reached', 'The plan allows 10 live calls.');
    });

    const refused = await post('/v1/calls', 'limit-1');
    const retried = await post('/v1/calls', 'limit-1');

    expect(refused.statusCode).toBe(402);
    expect(retried.statusCode).toBe(201);
    expect(retried.headers['idempotency-replayed']).toBeUndefined();
    expect(dials.get('limit-1')).toBe(1);
  });

  it('does not keep any refusal (4xx), which changed nothing: the same request runs afresh, another is still refused', async () => {
    script('refused-1', async () => {
      throw AppError.validation([{ field: 'name', message: 'is taken' }]);
    });

    expect((await post('/v1/things', 'refused-1', { name: 'a' })).statusCode).toBe(422);
    const other = await post('/v1/things', 'refused-1', { name: 'b' });
    const same = await post('/v1/things', 'refused-1', { name: 'a' });

    expect(other.statusCode).toBe(409);
    expect(other.json().detail).toMatch(/different request/);
    expect(same.statusCode).toBe(201);
    expect(await effects('refused-1')).toBe(1);
  });

  it('turns refusals stored before the upgrade into retryable keys, so none replays', async () => {
    await dataSource.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, state, status, body, locked_until)
       VALUES ('acc_1', 'old-402', 'h', 'done', 402, '{}', now()), ('acc_1', 'old-201', 'h', 'done', 201, '{}', now())`,
    );
    const runner = dataSource.createQueryRunner();
    await new IdempotencyRetryableKeys1764100000103().up(runner);
    await runner.release();

    const rows = await dataSource.query(`SELECT key, state, status FROM idempotency_keys WHERE key LIKE 'old-%' ORDER BY key`);
    expect(rows).toEqual([
      { key: 'old-201', state: 'done', status: 201 },
      { key: 'old-402', state: 'retryable', status: null },
    ]);
  });
});
