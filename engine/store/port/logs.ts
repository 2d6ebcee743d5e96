import type { LogLevel, RunLog } from '../../model/index.ts';

import type { Page, PageRequest } from './common.ts';

/** What operations logged during runs. */
export interface LogStore {
  /** Log lines newest first. */
  listRunLogs(tenantId: string, filter: RunLogFilter, page: PageRequest): Promise<Page<RunLog>>;
  /** Delete log lines older than `before`, of every tenant; returns how many. */
  pruneRunLogs(before: string): Promise<number>;
}

export interface NewRunLog {
  nodeId: string;
  level: LogLevel;
  message: string;
  data: unknown;
  loggedAt: string;
}

/** Log lines of a run to keep with its checkpoints; a run keeps at most `perRunLimit` (later ones are dropped). */
export interface RunLogAppend {
  flowId: string;
  lines: NewRunLog[];
  perRunLimit: number;
}

export interface RunLogFilter {
  flowId?: string;
  runId?: string;
  /** This level and above. */
  level?: LogLevel;
  from?: string;
  to?: string;
  /** Lines whose message contains it (case-insensitive). */
  text?: string;
}
