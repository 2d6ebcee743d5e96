import type { ErrorRecord, Statistics } from '../../model/index.ts';

/** What happened, counted: per time bucket, and per flow. */
export interface StatisticsStore {
  /**
   * Runs created in [from, to) per time bucket, flow and status, with duration percentiles; messages per bucket and
   * topic. The range widens to whole buckets; the answer gives it.
   */
  statistics(tenantId: string, request: StatisticsRequest): Promise<Statistics>;
  /** Active flows, and each flow's latest failed run. */
  flowHealth(tenantId: string): Promise<{ activeFlows: number; lastErrors: FlowLastError[] }>;
}

export interface StatisticsRequest {
  from: string;
  to: string;
  interval: 'hour' | 'day';
  flowId?: string;
}

export interface FlowLastError {
  flowId: string;
  flowName: string;
  runId: string;
  error: ErrorRecord | null;
  finishedAt: string | null;
}
