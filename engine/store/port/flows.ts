import type { FlowDocument, Flow, FlowVersion } from '../../model/index.ts';

import type { Page, PageRequest } from './common.ts';

/** Editable flows (their drafts) and their immutable published versions. */
export interface FlowStore {
  createFlow(tenantId: string, flow: { id: string; key: string; name: string; draft: FlowDocument }): Promise<Flow>;
  getFlow(tenantId: string, id: string): Promise<Flow | undefined>;
  findFlowByKey(tenantId: string, key: string): Promise<Flow | undefined>;
  listFlows(tenantId: string, filter: { published?: boolean }, page: PageRequest): Promise<Page<Flow>>;
  /**
   * Replace the draft if `expectedRevision` is current and the key unchanged (it is the flow URL); otherwise
   * ConflictError.
   */
  replaceDraft(tenantId: string, id: string, expectedRevision: number, draft: FlowDocument): Promise<Flow>;
  deleteFlow(tenantId: string, id: string): Promise<boolean>;
  /** Store `document` as the next immutable version and make it the active one. */
  publishFlow(
    tenantId: string,
    id: string,
    expectedRevision: number | undefined,
    document: FlowDocument,
  ): Promise<FlowVersion>;
  setFlowActive(tenantId: string, id: string, active: boolean): Promise<Flow>;
  getFlowVersion(tenantId: string, flowId: string, version: number): Promise<FlowVersion | undefined>;
  listFlowVersions(tenantId: string, flowId: string, page: PageRequest): Promise<Page<FlowVersion>>;
}
