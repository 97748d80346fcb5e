import { Controller } from '@nestjs/common';
import { workflowsV1 } from '@parley/contracts';
import { pageLimit } from '@parley/rpc';
import { toRecipientMessage, toRunMessage, toWorkflowMessage } from './presenters';
import { WorkflowsDomain } from './workflows.domain';
import { emptyCounts, RunRecord } from './workflows.repository';

const { WorkflowsServiceControllerMethods } = workflowsV1;

@Controller()
@WorkflowsServiceControllerMethods()
export class WorkflowsGrpcController implements workflowsV1.WorkflowsServiceController {
  constructor(private readonly domain: WorkflowsDomain) {}

  async createWorkflow(req: workflowsV1.CreateWorkflowRequest): Promise<workflowsV1.CreateWorkflowResponse> {
    return { workflow: toWorkflowMessage(await this.domain.createWorkflow(req.account_id, req.spec_json)) };
  }

  async getWorkflow(req: workflowsV1.GetWorkflowRequest): Promise<workflowsV1.GetWorkflowResponse> {
    return { workflow: toWorkflowMessage(await this.domain.getWorkflow(req.account_id, req.id)) };
  }

  async listWorkflows(req: workflowsV1.ListWorkflowsRequest): Promise<workflowsV1.ListWorkflowsResponse> {
    const page = await this.domain.listWorkflows(req.account_id, pageLimit(req.limit), req.after);
    return { workflows: page.items.map(toWorkflowMessage), has_more: page.hasMore, next: page.next };
  }

  async updateWorkflow(req: workflowsV1.UpdateWorkflowRequest): Promise<workflowsV1.UpdateWorkflowResponse> {
    return { workflow: toWorkflowMessage(await this.domain.updateWorkflow(req.account_id, req.id, req.patch_json)) };
  }

  async deleteWorkflow(req: workflowsV1.DeleteWorkflowRequest): Promise<workflowsV1.DeleteWorkflowResponse> {
    await this.domain.deleteWorkflow(req.account_id, req.id);
    return { id: req.id };
  }

  async startRun(req: workflowsV1.StartRunRequest): Promise<workflowsV1.StartRunResponse> {
    const { run, added, suppressed } = await this.domain.startRun(req.account_id, req);
    return { run: await this.present(run), page: { added, suppressed } };
  }

  async addRecipients(req: workflowsV1.AddRecipientsRequest): Promise<workflowsV1.AddRecipientsResponse> {
    const { run, added, suppressed } = await this.domain.addRecipients(req.account_id, req);
    return { run: await this.present(run), page: { added, suppressed } };
  }

  async getRun(req: workflowsV1.GetRunRequest): Promise<workflowsV1.GetRunResponse> {
    return { run: await this.present(await this.domain.getRun(req.account_id, req.workflow_id, req.run_id)) };
  }

  async listRuns(req: workflowsV1.ListRunsRequest): Promise<workflowsV1.ListRunsResponse> {
    const page = await this.domain.listRuns(req.account_id, req.workflow_id, pageLimit(req.limit), req.after);
    const counts = await this.domain.counts(page.items.map((r) => r.id));
    return { runs: page.items.map((r) => toRunMessage(r, counts.get(r.id) ?? emptyCounts())), has_more: page.hasMore, next: page.next };
  }

  async pauseRun(req: workflowsV1.PauseRunRequest): Promise<workflowsV1.PauseRunResponse> {
    return { run: await this.present(await this.domain.pauseRun(req.account_id, req.workflow_id, req.run_id)) };
  }

  async resumeRun(req: workflowsV1.ResumeRunRequest): Promise<workflowsV1.ResumeRunResponse> {
    return { run: await this.present(await this.domain.resumeRun(req.account_id, req.workflow_id, req.run_id)) };
  }

  async cancelRun(req: workflowsV1.CancelRunRequest): Promise<workflowsV1.CancelRunResponse> {
    return { run: await this.present(await this.domain.cancelRun(req.account_id, req.workflow_id, req.run_id)) };
  }

  async listRecipients(req: workflowsV1.ListRecipientsRequest): Promise<workflowsV1.ListRecipientsResponse> {
    const page = await this.domain.listRecipients(req.account_id, req, pageLimit(req.limit));
    return { recipients: page.items.map(toRecipientMessage), has_more: page.hasMore, next: page.next };
  }

  private async present(run: RunRecord): Promise<workflowsV1.Run> {
    return toRunMessage(run, (await this.domain.counts([run.id])).get(run.id) ?? emptyCounts());
  }
}
