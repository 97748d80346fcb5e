import { Inject, Injectable } from '@nestjs/common';
import { CarrierError, CarrierStatusUpdate } from '@parley/carrier-core';
import { ServiceConfig } from '@parley/config';
import { serviceLogger } from '@parley/observability';
import { CONFIG } from '@parley/runtime';
import { CallControl } from './call-control';
import { CallsRepository } from './calls.repository';
import { CarrierRegistry } from './carrier-registry';

/** How often the reconciler runs (CallsRunner); each pass looks up at most CARRIER_RECONCILE_BATCH calls. */
export const RECONCILE_PASS_MS = 5_000;

/**
 * What one carrier look-up leads to: its status goes through the status-callback path (`apply`), or — on an
 * error — the call is left for a later look-up; an error saying the carrier will refuse the next look-ups too
 * (rate limit, credentials) also ends the pass (`stopPass`), so the reconciler never hammers a carrier.
 */
export function reconcileStep(lookup: { update: CarrierStatusUpdate } | { error: unknown }): { apply?: CarrierStatusUpdate; stopPass: boolean } {
  if ('update' in lookup) return { apply: lookup.update, stopPass: false };
  const code = lookup.error instanceof CarrierError ? lookup.error.code : 'unknown';
  return { stopPass: code === 'rate_limited' || code === 'unauthorized' };
}

/**
 * Reconciles calls whose carrier status callbacks were missed (refused during an outage, lost on the way): a live
 * call with a carrier leg whose state has not moved for CARRIER_RECONCILE_SECONDS is looked up at the carrier's API
 * and the answer is applied exactly as a callback would be (CallControl.applyStatus: same transitions, same events;
 * a status that changes nothing emits nothing). Bounded: CARRIER_RECONCILE_BATCH look-ups per 5 s pass per
 * replica, each call at most once per CARRIER_RECONCILE_SECONDS.
 */
@Injectable()
export class CarrierReconciler {
  private readonly log = serviceLogger('calls');

  constructor(
    private readonly calls: CallsRepository,
    private readonly control: CallControl,
    private readonly carriers: CarrierRegistry,
    @Inject(CONFIG) private readonly config: ServiceConfig,
  ) {}

  /** One pass; resolves to the number of carrier statuses applied. */
  async runPass(): Promise<number> {
    const due = await this.calls.claimCarrierChecks(this.config.CARRIER_RECONCILE_SECONDS, this.config.CARRIER_RECONCILE_BATCH);
    let applied = 0;
    for (const call of due) {
      const carrier = this.carriers.pick(call.carrier);
      if (!carrier) continue;
      const lookup = await carrier.fetchCall(call.carrierCallId).then(
        (update) => ({ update }),
        (error: unknown) => ({ error }),
      );
      const step = reconcileStep(lookup);
      if (step.apply) {
        try {
          await this.control.applyStatus(carrier, step.apply);
          applied += 1;
        } catch (error) {
          this.log.warn({ err: error, callId: call.id }, 'carrier status could not be applied; a later pass retries');
        }
      } else {
        this.log.warn({ err: 'error' in lookup ? lookup.error : undefined, callId: call.id }, 'carrier look-up failed; a later pass retries');
      }
      if (step.stopPass) break;
    }
    return applied;
  }
}
