import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { WebhookEvent, webhookEventSubject } from '@parley/contracts';
import { CallOutcomes } from './call-outcomes';

/**
 * The calls service's events that decide a workflow recipient's outcome. Every call's events arrive; those of calls
 * no run placed (no `workflow` routing field) are acknowledged at once. Several at a time: each recipient's row
 * lock orders what concerns it.
 */
@Controller()
export class WorkflowsEventsController {
  constructor(private readonly outcomes: CallOutcomes) {}

  @EventPattern(webhookEventSubject('call.ended').name, { concurrency: 32 })
  async onCallEnded(@Payload() event: WebhookEvent<'call.ended'>): Promise<void> {
    await this.outcomes.callEnded(event);
  }

  @EventPattern(webhookEventSubject('call.analysed').name, { concurrency: 32 })
  async onCallAnalysed(@Payload() event: WebhookEvent<'call.analysed'>): Promise<void> {
    await this.outcomes.callAnalysed(event);
  }
}
