import { callsV1, WebhookEvent } from '@parley/contracts';
import { newId } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { CallsPort } from '../calls-port';

export interface PlacedCall {
  id: string;
  request: callsV1.CreateCallRequest;
  live: boolean;
}

/**
 * The calls service as workflows see it: calls created idempotently on their key (as CallsService.CreateCall does),
 * a do-not-call list, scripted refusals, and the events that end a call.
 */
export class FakeCalls implements CallsPort {
  readonly placed: PlacedCall[] = [];
  readonly doNotCallList = new Set<string>();
  /** Refusals to answer the next creates with, in order. */
  readonly refusals: AppError[] = [];
  /** Called before a create is recorded; a throw makes that create fail (a crash, a lost peer). */
  beforeCreate: (request: callsV1.CreateCallRequest) => Promise<void> = async () => undefined;
  private maxLive = 0;

  async createCall(request: callsV1.CreateCallRequest): Promise<{ id: string }> {
    await this.beforeCreate(request);
    const known = this.placed.find((c) => c.request.idempotency_key === request.idempotency_key);
    if (known) return { id: known.id };
    const refusal = this.refusals.shift();
    if (refusal) throw refusal;
    const call = { id: newId('call'), request, live: true };
    this.placed.push(call);
    this.maxLive = Math.max(this.maxLive, this.live().length);
    return { id: call.id };
  }

  async doNotCall(_accountId: string, numbers: string[]): Promise<string[]> {
    return numbers.filter((n) => this.doNotCallList.has(n));
  }

  live(): PlacedCall[] {
    return this.placed.filter((c) => c.live);
  }

  /** The most calls that were live at once. */
  get peakLive(): number {
    return this.maxLive;
  }

  callsTo(to: string): PlacedCall[] {
    return this.placed.filter((c) => c.request.to === to);
  }

  /** Ends a live call: the `call.ended` event the calls service would publish for it. */
  end(call: PlacedCall, endReason: string): WebhookEvent<'call.ended'> {
    call.live = false;
    return {
      id: newId('evt'),
      type: 'call.ended',
      call_id: call.id,
      created_at: new Date().toISOString(),
      data: { duration_seconds: 10, turns: 2, end_reason: endReason },
      account_id: call.request.account_id,
      agent_id: call.request.agent_id,
      workflow: { run_id: call.request.workflow_run_id, recipient_id: call.request.workflow_recipient_id },
    };
  }
}
