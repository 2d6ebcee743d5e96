import type {
  ErrorRecord,
  Message,
  Run,
  RunConcurrency,
  RunDebounce,
  RunStatus,
  Step,
  TerminalRunStatus,
} from '../../model/index.ts';
import type { SealedValue } from '../../secrets/index.ts';

import type { Page, PageRequest } from './common.ts';
import type { RunLogAppend } from './logs.ts';

/** Runs as workers take them up, checkpoint and finish them. */
export interface RunStore {
  /**
   * Take a run up: mark it running and count the attempt, and return it with its message,
   * checkpoints and the variables and sealed secrets it reads, in one round trip. A finished run
   * is returned as it is, unchanged.
   */
  beginRun(tenantId: string, runId: string, reads?: RunReads): Promise<RunState | undefined>;
  /**
   * Save checkpoints, optionally the run's new status, and what its operations logged, in one
   * statement. A finished run keeps its first outcome; returns whether the status was written.
   */
  saveProgress(
    tenantId: string,
    runId: string,
    steps: Step[],
    outcome?: RunOutcome,
    logs?: RunLogAppend,
  ): Promise<boolean>;
  /** What a run would read (a test run, which has no record): the same as `beginRun` gives. */
  readRunContext(tenantId: string, reads: RunReads): Promise<Pick<RunState, 'vars' | 'sealedSecrets' | 'platform'>>;
  /** A run with its checkpoints, and the trace context its message was accepted in (when tracing was on). */
  getRun(tenantId: string, runId: string): Promise<{ run: Run; steps: Step[]; traceparent?: string } | undefined>;
  /**
   * Queued runs whose messages a later one with the same debounce key replaced end `debounced`, naming the run that
   * took their place (`by`); a run already taken up is left as it is.
   */
  debounceRuns(runs: Array<{ tenantId: string; runId: string; by: string }>): Promise<void>;
  /** Whether a run of the flow has not finished yet (queued, running or waiting). */
  hasUnfinishedRun(tenantId: string, flowId: string): Promise<boolean>;
  listRuns(tenantId: string, filter: RunFilter, page: PageRequest): Promise<Page<Run>>;
  /**
   * Unfinished runs (queued, running, waiting) of every tenant, or of one, created before `createdBefore`, oldest
   * first, after the cursor: what the queue reconciler checks against the queue's jobs, and what a tenant's move
   * between slot groups of the run path takes along.
   */
  listUnfinishedRuns(
    createdBefore: string,
    after: UnfinishedRunCursor | undefined,
    limit: number,
    tenantId?: string,
  ): Promise<UnfinishedRun[]>;
}

export interface RunOutcome {
  status: 'waiting' | TerminalRunStatus;
  error: ErrorRecord | null;
  /** The run's time waited on outbound budgets so far (unset: unchanged). */
  budgetWaitMs?: number;
}

/** Names of the variables, secrets and platform values a run reads; '*' for every platform value. */
export interface RunFilter {
  flowId?: string;
  status?: RunStatus;
  /** The runs a run's call nodes started. */
  parentRunId?: string;
}

export interface RunReads {
  vars: ReadonlySet<string> | readonly string[];
  secrets: ReadonlySet<string> | readonly string[];
  platform: ReadonlySet<string> | readonly string[] | '*';
}

export interface RunState {
  run: Run;
  /** Its body as a JsonText when it is large (LARGE_JSON_LENGTH): the run parses it only if it reads it. */
  message: Message;
  steps: Step[];
  /** The trace context its message was accepted in (a W3C traceparent), when tracing was on. */
  traceparent?: string;
  vars: Record<string, unknown>;
  sealedSecrets: Array<{ name: string } & SealedValue>;
  /** `$platform`: the tenant's override of each name, else the platform's value. */
  platform: Record<string, unknown>;
}

/** A run the queue reconciler checks, and where the next look continues. */
export interface UnfinishedRun {
  tenantId: string;
  id: string;
  flowId: string;
  flowVersion: number;
  status: 'queued' | 'running' | 'waiting';
  createdAt: string;
  concurrency: RunConcurrency | null;
  debounce: RunDebounce | null;
  /** Its own priority, 1 (first) to 5: its bulk replay's; null: its flow's. */
  priority: number | null;
}

export type UnfinishedRunCursor = Pick<UnfinishedRun, 'createdAt' | 'id'>;
