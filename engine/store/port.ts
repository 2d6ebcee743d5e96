/** The persistence port: one module per aggregate (port/), and `Store`, their sum. */
import type { TenantStore, CredentialStore } from './port/tenants.ts';
import type { FlowStore } from './port/flows.ts';
import type { ValueStore } from './port/values.ts';
import type { DestinationStore } from './port/destinations.ts';
import type { MessageStore } from './port/messages.ts';
import type { RunStore } from './port/runs.ts';
import type { BatchStore } from './port/batches.ts';
import type { StatisticsStore } from './port/statistics.ts';
import type { DataSpaceStore } from './port/data-spaces.ts';
import type { LogStore } from './port/logs.ts';
import type { ActionStore } from './port/actions.ts';
import type { ReplayStore } from './port/replays.ts';
import type { AlertStore } from './port/alerts.ts';
import type { RetentionStore } from './port/retention.ts';

export type {
  TenantAction,
  LogLevel,
  RunLog,
  DataDocument,
  DataSpace,
  Statistics,
  UserSettings,
  BlockedTopic,
  HoldReason,
  MessageInfo,
  MessageStatus,
  Batch,
  BatchCounts,
  BatchStatus,
  BatchTask,
  IncrementalField,
  Destination,
  Environment,
  Flow,
  FlowVersion,
  Message,
  Run,
  RunStatus,
  SecretInfo,
  Step,
  StepStatus,
  Tenant,
  TenantLimits,
  TerminalRunStatus,
  Variable,
  Replay,
  ReplayFilter,
} from '../model/index.ts';
export { messageStatuses, runStatuses, stepStatuses, terminalRunStatuses } from '../model/index.ts';

export * from './port/common.ts';
export * from './port/tenants.ts';
export * from './port/flows.ts';
export * from './port/values.ts';
export * from './port/destinations.ts';
export * from './port/messages.ts';
export * from './port/runs.ts';
export * from './port/batches.ts';
export * from './port/statistics.ts';
export * from './port/data-spaces.ts';
export * from './port/logs.ts';
export * from './port/actions.ts';
export * from './port/replays.ts';
export * from './port/alerts.ts';
export * from './port/retention.ts';

/**
 * The persistence port: one slice per aggregate, each caller depending on the slices it uses. The
 * engine and the API speak only this; adapters (SQL on PGlite or PostgreSQL) implement it whole.
 * Every tenant-owned record is read and written with its tenant id: no method reaches across
 * tenants except the operator's tenant and client bookkeeping, and the reconciler's and log
 * pruning's sweeps.
 */
export interface Store
  extends TenantStore,
    CredentialStore,
    FlowStore,
    ValueStore,
    DestinationStore,
    MessageStore,
    RunStore,
    BatchStore,
    StatisticsStore,
    DataSpaceStore,
    LogStore,
    ActionStore,
    ReplayStore,
    AlertStore,
    RetentionStore {
  ping(): Promise<void>;
  close(): Promise<void>;
}
