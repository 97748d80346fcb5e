import { Injectable } from '@nestjs/common';
import { serviceLogger } from '@parley/observability';
import { CallsDomain } from './calls.domain';
import { CarrierRegistry } from './carrier-registry';
import { CallEntity } from './entities';

/** How often the reaper looks for stuck calls (CallsRunner): a call is failed at most this long after its limit ran out. */
export const REAPER_PASS_MS = 5_000;

/**
 * Fails live calls that can no longer progress (CallsDomain.failStuckCalls: `media_lost` when the media worker's
 * heartbeats stopped, `no_media` when nothing happened at all) and hangs their carrier legs up, so a caller whose
 * media worker died hears the call end instead of dead air.
 */
@Injectable()
export class CallReaper {
  private readonly log = serviceLogger('calls');

  constructor(
    private readonly calls: CallsDomain,
    private readonly carriers: CarrierRegistry,
  ) {}

  /** One pass: the calls failed by it, their carrier legs asked to hang up (a leg already gone is no error). */
  async runPass(): Promise<CallEntity[]> {
    const failed = await this.calls.failStuckCalls();
    await Promise.all(
      failed.map(async (call) => {
        const carrier = call.carrier ? this.carriers.pick(call.carrier) : undefined;
        if (!carrier || !call.carrierCallId) return;
        await carrier.endCall(call.carrierCallId).catch((error: unknown) => this.log.warn({ err: error, callId: call.id }, 'carrier leg of a failed call not hung up'));
      }),
    );
    return failed;
  }
}
