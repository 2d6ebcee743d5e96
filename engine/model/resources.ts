/**
 * One JSON Schema per resource, in one module per aggregate under resources/: the TypeScript record
 * types are derived from them, the API validates with them, and the OpenAPI document publishes them.
 * This module gathers them.
 */
import { flowDocumentSchema } from './flow-document.ts';

import { errorRecordSchema } from './resources/common.ts';
import { environmentSchema, tenantSchema, userSettingsSchema } from './resources/tenants.ts';
import { flowSchema, flowVersionSchema } from './resources/flows.ts';
import { variableSchema, secretInfoSchema } from './resources/values.ts';
import { exchangeSchema, runStatuses, stepStatuses, runSchema, stepSchema } from './resources/runs.ts';
import { messageSchema, messageStatuses, messageInfoSchema, blockedTopicSchema } from './resources/messages.ts';
import { destinationSchema } from './resources/destinations.ts';
import { batchStatuses, batchSchema, batchTaskSchema, incrementalFieldSchema } from './resources/batches.ts';
import { statisticsSchema } from './resources/statistics.ts';
import { dataSpaceSchema, dataDocumentSchema } from './resources/data-spaces.ts';
import { runLogSchema } from './resources/logs.ts';
import { tenantActionSchema, operationInfoSchema } from './resources/actions.ts';
import { replaySchema } from './resources/replays.ts';
import { alertChannelSchema, alertRuleSchema, alertSchema } from './resources/alerts.ts';
import { fixtureSchema } from './resources/fixtures.ts';

export { errorRecordSchema, type ErrorRecord } from './resources/common.ts';
export { type Fixture, fixtureSchema } from './resources/fixtures.ts';
export {
  tenantLimitsSchema,
  tenantSchema,
  userSettingsSchema,
  type Tenant,
  type TenantLimits,
  type UserSettings,
} from './resources/tenants.ts';
export { flowSchema, flowVersionSchema, type Flow, type FlowVersion } from './resources/flows.ts';
export { variableSchema, secretInfoSchema, type Variable, type SecretInfo } from './resources/values.ts';
export {
  runStatuses,
  terminalRunStatuses,
  unfinishedRunStatuses,
  stepStatuses,
  runSchema,
  stepSchema,
  exchangeSchema,
  type Exchange,
  MAX_RECORDED_BODY_BYTES,
  MAX_RECORDED_EXCHANGES,
  type Run,
  type RunConcurrency,
  type RunDebounce,
  type Step,
  type RunStatus,
  type TerminalRunStatus,
  type StepStatus,
  holdReasons,
} from './resources/runs.ts';
export {
  messageSchema,
  messageStatuses,
  messageInfoSchema,
  blockedTopicSchema,
  type Message,
  type MessageInfo,
  type MessageStatus,
  type HoldReason,
  type BlockedTopic,
} from './resources/messages.ts';
export { destinationSchema, type Destination } from './resources/destinations.ts';
export {
  batchStatuses,
  batchCountsSchema,
  batchSchema,
  batchTaskSchema,
  incrementalFieldSchema,
  type Batch,
  type BatchCounts,
  type BatchStatus,
  type BatchTask,
  type IncrementalField,
} from './resources/batches.ts';
export { statisticsSchema, type Statistics } from './resources/statistics.ts';
export { dataSpaceSchema, dataDocumentSchema, type DataSpace, type DataDocument } from './resources/data-spaces.ts';
export { logLevels, runLogSchema, type RunLog, type LogLevel } from './resources/logs.ts';
export { tenantActionSchema, operationInfoSchema, type TenantAction, type OperationInfo } from './resources/actions.ts';
export {
  DEFAULT_REPLAY_RATE,
  LOWEST_PRIORITY,
  MAX_REPLAY_RATE,
  MAX_RUNNING_REPLAYS,
  REPLAY_COUNT_LIMIT,
  REDO_COMPLETED_STEPS,
  replayFilterSchema,
  replaySchema,
  replayStatuses,
  type Replay,
  type ReplayFilter,
  type ReplayStatus,
} from './resources/replays.ts';

export {
  alertChannelSchema,
  alertChannelTypes,
  alertConditionKinds,
  alertDeliveryStatuses,
  alertRuleSchema,
  alertSchema,
  MAX_ALERT_CHANNELS,
  MAX_ALERT_RULES,
  newAlertChannelSchema,
  newAlertRuleSchema,
  type Alert,
  type AlertChannel,
  type AlertChannelType,
  type AlertCondition,
  type AlertRule,
  type NewAlertChannel,
  type NewAlertRule,
} from './resources/alerts.ts';

/** The resources the OpenAPI document publishes under components.schemas. */
export const resourceSchemas = {
  FlowDocument: flowDocumentSchema,
  Flow: flowSchema,
  FlowVersion: flowVersionSchema,
  Variable: variableSchema,
  SecretInfo: secretInfoSchema,
  Message: messageSchema,
  MessageInfo: messageInfoSchema,
  BlockedTopic: blockedTopicSchema,
  Statistics: statisticsSchema,
  DataSpace: dataSpaceSchema,
  RunLog: runLogSchema,
  TenantAction: tenantActionSchema,
  DataDocument: dataDocumentSchema,
  UserSettings: userSettingsSchema,
  Run: runSchema,
  Step: stepSchema,
  Exchange: exchangeSchema,
  Fixture: fixtureSchema,
  ErrorRecord: errorRecordSchema,
  Tenant: tenantSchema,
  Environment: environmentSchema,
  Destination: destinationSchema,
  Batch: batchSchema,
  BatchTask: batchTaskSchema,
  IncrementalField: incrementalFieldSchema,
  OperationInfo: operationInfoSchema,
  Replay: replaySchema,
  AlertChannel: alertChannelSchema,
  AlertRule: alertRuleSchema,
  Alert: alertSchema,
};

/** The status enums of the resources, as the Metadata API lists them. */
export const statusEnums = { runStatuses, stepStatuses, batchStatuses, messageStatuses };
