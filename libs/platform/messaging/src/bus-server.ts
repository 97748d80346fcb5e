import { CustomTransportStrategy, MessageHandler, Server } from '@nestjs/microservices';
import { isObservable, lastValueFrom } from 'rxjs';
import { REQUEST_ID_HEADER } from '@parley/contracts';
import { acceptRequestId, busHandlerDuration, runWithRequestId } from '@parley/observability';
import { Bus, BusMessage, SubscribeOptions } from './bus';

/**
 * A NestJS transport over the bus: every `@EventPattern(SUBJECTS.x.name)` handler of the service becomes a
 * durable consumer named `<service>.<subject>`; `@EventPattern(subject, { concurrency: n })` lets one replica handle
 * n of its messages at once (see SubscribeOptions). A handler that throws leaves the message unacknowledged, so the
 * bus redelivers it.
 */
export class BusServer extends Server implements CustomTransportStrategy {
  constructor(
    private readonly bus: Bus,
    private readonly service: string,
  ) {
    super();
  }

  async listen(callback: (...optionalParams: unknown[]) => void): Promise<void> {
    try {
      for (const [pattern, handler] of this.getHandlers()) {
        if (!handler.isEventHandler) continue;
        const durable = `${this.service}.${pattern}`.replace(/[.>*]/g, '_');
        const options: SubscribeOptions = { concurrency: (handler.extras as SubscribeOptions | undefined)?.concurrency };
        await this.bus.subscribe(pattern, durable, (message) => this.dispatch(pattern, handler, message), options);
      }
      callback();
    } catch (error) {
      callback(error);
    }
  }

  private async dispatch(pattern: string, handler: MessageHandler, message: BusMessage): Promise<void> {
    const end = busHandlerDuration.startTimer({ service: this.service, subject: pattern });
    try {
      await runWithRequestId(acceptRequestId(message.headers[REQUEST_ID_HEADER]), async () => {
        const result = await handler(message.payload, message);
        if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
      });
      end({ outcome: 'ok' });
    } catch (error) {
      end({ outcome: 'error' });
      throw error;
    }
  }

  close(): void {
    // The bus is owned by the service runtime, which closes it after the transports.
  }

  on(): never {
    throw new Error('BusServer has no status events');
  }

  unwrap<T>(): T {
    return this.bus as T;
  }
}
