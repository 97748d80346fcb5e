import type { callsV1 } from '@parley/contracts';

/** A call as it crosses gRPC: every field empty (an answered outbound call's shape) but those given. */
export function callMessage(over: Partial<callsV1.Call> & Pick<callsV1.Call, 'id'>): callsV1.Call {
  return {
    account_id: 'acc_1',
    agent_id: 'agt_1',
    direction: 'outbound',
    to: '',
    from: '',
    status: 'in_progress',
    end_reason: '',
    carrier: '',
    carrier_call_id: '',
    variables: {},
    metadata: {},
    created_at: '',
    answered_at: '',
    ended_at: '',
    duration_seconds: 0,
    turns: 0,
    recording_available: false,
    transcript_available: false,
    failure_reason: '',
    recording_enabled: false,
    recording_content_type: '',
    recording_duration_seconds: 0,
    summary: '',
    extracted_json: '',
    answered_by: '',
    seats: [],
    claimable: false,
    claimed_by: '',
    claimed_at: '',
    workflow_run_id: '',
    workflow_recipient_id: '',
    ...over,
  };
}
