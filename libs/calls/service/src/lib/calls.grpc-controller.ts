import { Controller } from '@nestjs/common';
import { callsV1 } from '@parley/contracts';
import { pageLimit } from '@parley/rpc';
import { CallsDomain } from './calls.domain';
import { CallEntity } from './entities';

const { CallsServiceControllerMethods } = callsV1;
const iso = (d: Date | null) => (d ? d.toISOString() : '');

function toCall(c: CallEntity): callsV1.Call {
  return {
    id: c.id,
    account_id: c.accountId,
    agent_id: c.agentId,
    direction: c.direction,
    to: c.to,
    from: c.from,
    status: c.status,
    end_reason: c.endReason ?? '',
    carrier: c.carrier ?? '',
    carrier_call_id: c.carrierCallId ?? '',
    variables: c.variables,
    metadata: c.metadata,
    created_at: iso(c.createdAt),
    answered_at: iso(c.answeredAt),
    ended_at: iso(c.endedAt),
    duration_seconds: c.answeredAt && c.endedAt ? (c.endedAt.getTime() - c.answeredAt.getTime()) / 1000 : 0,
    turns: c.turns,
    recording_available: c.recordingAvailable,
    transcript_available: c.transcriptAvailable,
    failure_reason: c.failureReason ?? '',
  };
}

@Controller()
@CallsServiceControllerMethods()
export class CallsGrpcController implements callsV1.CallsServiceController {
  constructor(private readonly calls: CallsDomain) {}

  async createCall(req: callsV1.CreateCallRequest): Promise<callsV1.CreateCallResponse> {
    const call = await this.calls.create(req.account_id, {
      agentId: req.agent_id,
      to: req.to,
      from: req.from || undefined,
      variables: req.variables,
      metadata: req.metadata,
    });
    return { call: toCall(call) };
  }

  async getCall(req: callsV1.GetCallRequest): Promise<callsV1.GetCallResponse> {
    return { call: toCall(await this.calls.get(req.account_id, req.id)) };
  }

  async listCalls(req: callsV1.ListCallsRequest): Promise<callsV1.ListCallsResponse> {
    const page = await this.calls.list(req.account_id, pageLimit(req.limit), req.after, {
      agentId: req.agent_id || undefined,
      status: req.status || undefined,
      direction: req.direction || undefined,
      createdAfter: req.created_after || undefined,
      createdBefore: req.created_before || undefined,
    });
    return { data: page.items.map(toCall), has_more: page.hasMore, next: page.next };
  }

  async endCall(req: callsV1.EndCallRequest): Promise<callsV1.EndCallResponse> {
    return { call: toCall(await this.calls.end(req.account_id, req.id, req.reason === 'given_up' ? 'given_up' : 'hangup')) };
  }
}
