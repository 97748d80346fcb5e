import { AsyncLocalStorage } from 'node:async_hooks';
import { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { CustomTransportStrategy, MessageHandler, Server } from '@nestjs/microservices';
import { isObservable, lastValueFrom, Observable, tap } from 'rxjs';
import { REQUEST_ID_HEADER } from '@parley/contracts';
import { acceptRequestId, busHandlerDuration, runWithRequestId, serviceLogger } from '@parley/observability';
import { inConsumerSpan } from '@parley/tracing';
import { Bus, BusMessage, SubscribeOptions } from './bus';
import { DeadLetter, DeadLetterStore } from './dead-letters';

/**
 * Deliveries of one message a consumer tries before parking it (JetStream redelivers a failed one after 1 s, 5 s,
 * 25 s, then every minute: about 5 minutes in all; the in-process bus counts the outbox's attempts), so a poison
 * message stops being retried while an outage shorter than that loses nothing.
 */
export const MAX_DELIVERIES = 8;
const REPLAY_POLL_MS = 5_000;

/** The durable consumer name of a service's `@EventPattern(pattern)`: dead letters carry it as `consumer`. */
export function consumerName(service: string, pattern: string): string {
  return `${service}.${pattern}`.replace(/[.>*]/g, '_');
}

/** The handler's own error, kept for the dead letter's reason while Nest's exception layers hide it. */
const handlerFailure = new AsyncLocalStorage<{ error?: unknown }>();

/**
 * Records a bus handler's error as the handler threw it. The service runtime registers it last (innermost), so
 * it sees the error before other interceptors and the exception filter replace it with a generic one.
 */
export class BusHandlerErrors implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const slot = handlerFailure.getStore();
    return slot ? next.handle().pipe(tap({ error: (error: unknown) => (slot.error = error) })) : next.handle();
  }
}

/**
 * A NestJS transport over the bus: every `@EventPattern(SUBJECTS.x.name)` handler of the service becomes a
 * durable consumer named `<service>_<subject>` (dots and wildcards as `_`); `@EventPattern(subject, { concurrency:
 * n })` lets one replica handle n of its messages at once (see SubscribeOptions). A handler that throws leaves the
 * message unacknowledged, so the bus redelivers it; when its last allowed delivery (MAX_DELIVERIES) fails too, the
 * message is parked in the service's dead_letters table (consumer = the durable name) and acknowledged. If parking
 * fails as well, the bus keeps redelivering: nothing is dropped. A parked message an operator marks with
 * replay_requested_at is handed to its handler again by a replica within 5 s.
 */
export class BusServer extends Server implements CustomTransportStrategy {
  private readonly consumers = new Map<string, (letter: DeadLetter) => Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private readonly log = serviceLogger('bus');

  constructor(
    private readonly bus: Bus,
    private readonly service: string,
    /** Without one (a service with no database), a failing message is redelivered without bound. */
    private readonly deadLetters?: DeadLetterStore,
    private readonly options: { maxDeliveries?: number; replayPollMs?: number } = {},
  ) {
    super();
  }

  async listen(callback: (...optionalParams: unknown[]) => void): Promise<void> {
    try {
      for (const [pattern, handler] of this.getHandlers()) {
        if (!handler.isEventHandler) continue;
        const durable = consumerName(this.service, pattern);
        const options: SubscribeOptions = { concurrency: (handler.extras as SubscribeOptions | undefined)?.concurrency };
        await this.bus.subscribe(pattern, durable, (message) => this.consume(durable, pattern, handler, message), options);
        this.consumers.set(durable, (letter) => this.run(pattern, handler, { ...letter, deliveryCount: letter.deliveries + 1 }));
      }
      const deadLetters = this.deadLetters;
      if (deadLetters && this.consumers.size) {
        this.timer = setInterval(
          () => void deadLetters.replay(this.consumers).catch((error) => this.log.warn({ err: error }, 'dead-letter replay failed')),
          this.options.replayPollMs ?? REPLAY_POLL_MS,
        );
      }
      callback();
    } catch (error) {
      callback(error);
    }
  }

  private async consume(durable: string, pattern: string, handler: MessageHandler, message: BusMessage): Promise<void> {
    try {
      await this.run(pattern, handler, message);
    } catch (error) {
      if (!this.deadLetters || message.deliveryCount < (this.options.maxDeliveries ?? MAX_DELIVERIES)) throw error;
      const reason = await this.deadLetters.park(durable, { ...message, deliveries: message.deliveryCount }, error);
      this.deadLetters.count(durable);
      this.log.error({ message_id: message.id, subject: message.subject, consumer: durable, reason }, 'message parked in dead_letters after its last allowed delivery failed');
    }
  }

  /** Runs the handler; a failure rejects with the handler's own error, the one a dead letter's reason names. */
  private async run(pattern: string, handler: MessageHandler, message: BusMessage): Promise<void> {
    const failure: { error?: unknown } = {};
    try {
      await handlerFailure.run(failure, () => this.dispatch(pattern, handler, message));
    } catch (error) {
      throw failure.error ?? error;
    }
  }

  private async dispatch(pattern: string, handler: MessageHandler, message: BusMessage): Promise<void> {
    const end = busHandlerDuration.startTimer({ service: this.service, subject: pattern });
    try {
      await inConsumerSpan(message, () =>
        runWithRequestId(acceptRequestId(message.headers[REQUEST_ID_HEADER]), async () => {
          const result = await handler(message.payload, message);
          if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
        }),
      );
      end({ outcome: 'ok' });
    } catch (error) {
      end({ outcome: 'error' });
      throw error;
    }
  }

  close(): void {
    // The bus is owned by the service runtime, which closes it after the transports.
    clearInterval(this.timer);
  }

  on(): never {
    throw new Error('BusServer has no status events');
  }

  unwrap<T>(): T {
    return this.bus as T;
  }
}
