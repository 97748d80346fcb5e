import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { WebhookEvent } from '@parley/contracts';
import { BusMessage } from '@parley/messaging';
import { serviceLogger } from '@parley/observability';
import { newId } from '@parley/persistence';
import { DeliveryEngine } from './delivery.engine';
import { deadLettersTotal, deadLettersWaiting } from './metrics';

/**
 * Deliveries of one event the dispatcher tries before parking it (the bus redelivers a failed one after 1 s, 5 s,
 * 25 s, then every minute: about 5 minutes in all), so a poison event stops being retried while an outage of
 * the database shorter than that loses nothing.
 */
export const MAX_EVENT_DELIVERIES = 8;
const REPLAY_POLL_MS = 5_000;

/**
 * Events the dispatcher could not accept, parked with the reason instead of being redelivered forever; an
 * operator asks for a replay by setting `replay_requested_at` (docs/webhooks.md), and a replica accepts them
 * again (fan-out is idempotent on the event id, so a replay never duplicates a delivery).
 */
@Injectable()
export class DeadLetters implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = serviceLogger('webhook-dispatcher');
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly dataSource: DataSource,
    private readonly engine: DeliveryEngine,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => this.replay().catch((error) => this.log.warn({ err: error }, 'dead-letter replay failed')), REPLAY_POLL_MS);
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** Accepts a bus event, parking it when its last allowed delivery fails too (a failed park is redelivered). */
  async accept(event: WebhookEvent, message: Pick<BusMessage, 'id' | 'subject' | 'deliveryCount'>): Promise<void> {
    try {
      await this.engine.accept(event);
    } catch (error) {
      if (message.deliveryCount < MAX_EVENT_DELIVERIES) throw error;
      await this.park(message.id, message.subject, event, error, message.deliveryCount);
    }
  }

  private async park(messageId: string, subject: string, event: unknown, error: unknown, deliveries: number): Promise<void> {
    const reason = String((error as Error)?.message ?? error).slice(0, 1000);
    await this.dataSource.query(
      `INSERT INTO dead_letters (id, message_id, subject, payload, reason, deliveries) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (message_id) DO UPDATE SET reason = $5, deliveries = dead_letters.deliveries + $6, parked_at = now(), replay_requested_at = NULL, replayed_at = NULL`,
      [newId('wdl'), messageId, subject, JSON.stringify(event), reason, deliveries],
    );
    deadLettersTotal.inc();
    this.log.error({ message_id: messageId, subject, reason }, 'event parked in dead_letters after its last allowed delivery failed');
  }

  /** Accepts the parked events an operator asked to replay; one that fails again stays parked with the new reason. */
  async replay(): Promise<number> {
    const requested: { id: string; payload: string }[] = await this.dataSource.query(
      `WITH r AS (
         UPDATE dead_letters SET replay_requested_at = NULL
          WHERE id IN (SELECT id FROM dead_letters WHERE replay_requested_at IS NOT NULL ORDER BY parked_at LIMIT 100 FOR UPDATE SKIP LOCKED)
         RETURNING id, payload
       )
       SELECT id, payload FROM r`,
    );
    for (const row of requested) {
      try {
        await this.engine.accept(JSON.parse(row.payload) as WebhookEvent);
        await this.dataSource.query(`UPDATE dead_letters SET replayed_at = now() WHERE id = $1`, [row.id]);
      } catch (error) {
        await this.dataSource.query(`UPDATE dead_letters SET reason = $2 WHERE id = $1`, [row.id, `replay failed: ${String((error as Error)?.message ?? error).slice(0, 1000)}`]);
      }
    }
    const [{ waiting }] = await this.dataSource.query(`SELECT count(*)::int AS waiting FROM dead_letters WHERE replayed_at IS NULL`);
    deadLettersWaiting.set(waiting);
    return requested.length;
  }
}
