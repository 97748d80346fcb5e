import { Controller, INestMicroservice, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { REQUEST_ID_HEADER } from '@parley/contracts';
import { currentRequestId } from '@parley/observability';
import { BusServer } from './bus-server';
import { InProcessBus } from './in-process-bus';

const seen: { payload: unknown; requestId: string | undefined }[] = [];
let failingCalls = 0;

@Controller()
class ProbeController {
  @EventPattern('parley.domain.bus-server-test.ok')
  async onOk(@Payload() payload: unknown): Promise<void> {
    seen.push({ payload, requestId: currentRequestId() });
  }

  @EventPattern('parley.domain.bus-server-test.fails')
  async onFails(): Promise<void> {
    failingCalls++;
    throw new Error('handler refuses');
  }
}

@Module({ controllers: [ProbeController] })
class ProbeModule {}

describe('BusServer (NestJS transport over the bus)', () => {
  let bus: InProcessBus;
  let app: INestMicroservice;

  beforeAll(async () => {
    bus = new InProcessBus();
    app = await NestFactory.createMicroservice(ProbeModule, { strategy: new BusServer(bus, 'probe'), logger: false });
    await app.listen();
    bus.open();
  });

  afterAll(async () => {
    await app?.close();
    await bus?.close();
  });

  beforeEach(() => {
    seen.length = 0;
  });

  it('routes a published message to the @EventPattern handler with its payload and request id', async () => {
    await bus.publish('parley.domain.bus-server-test.ok', { n: 1 }, { id: 'bs-1', headers: { [REQUEST_ID_HEADER]: 'req_from_publisher' } });

    expect(seen).toEqual([{ payload: { n: 1 }, requestId: 'req_from_publisher' }]);
  });

  it('gives the handler a fresh request id when the message carries none or a malformed one', async () => {
    await bus.publish('parley.domain.bus-server-test.ok', { n: 2 }, { id: 'bs-2', headers: { [REQUEST_ID_HEADER]: 'bad id\nwith newline' } });

    expect(seen).toHaveLength(1);
    expect(seen[0].requestId).toMatch(/^req_/);
    expect(seen[0].requestId).not.toContain('\n');
  });

  it('fails the delivery when the handler throws, so the bus delivers it again later', async () => {
    // NestJS's exception layer turns the error into an RPC error value; what matters is that the publish fails.
    const outcome = await bus.publish('parley.domain.bus-server-test.fails', {}, { id: 'bs-3' }).then(
      () => 'delivered',
      () => 'failed',
    );

    expect(failingCalls).toBe(1);
    expect(outcome).toBe('failed');
  });
});
