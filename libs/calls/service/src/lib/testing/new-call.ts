import { NewCall } from '../calls.repository';

/** A call to insert, for the calls service's tests: an outbound Twilio call of acc_1's agt_1, queued, but what is given. */
export const newCall = (over: Partial<NewCall> = {}): NewCall => ({
  accountId: 'acc_1',
  agentId: 'agt_1',
  direction: 'outbound',
  to: '+15550100000',
  from: '+15550109999',
  status: 'queued',
  carrier: 'twilio',
  carrierCallId: null,
  recordingEnabled: true,
  variables: {},
  metadata: {},
  ...over,
});
