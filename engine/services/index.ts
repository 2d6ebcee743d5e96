/**
 * The use cases: what a tenant or an operator does (publish a flow, delete a tenant, replay, test an alert
 * channel), each a method of a service named for its concept, testable without HTTP. The API's routes call them.
 */
export { type ActionDefinition, ActionService } from './action-service.ts';
export { ALERT_TEST_TIMEOUT_MS, AlertService, type AlertTestOutcome } from './alert-service.ts';
export { BlockedTopicService } from './blocked-topic-service.ts';
export { DataSpaceService, type DocumentWrite } from './data-space-service.ts';
export { type DestinationKinds, DestinationService, type WebhookTarget } from './destination-service.ts';
export { type ActiveVersionListener, FlowService, type FlowReview } from './flow-service.ts';
export { DEFAULT_POLL_OVERLAP_MS, IncrementalFieldService } from './incremental-field-service.ts';
export type { NamedRecords } from './named-records.ts';
export { ReplayService, type ReplayRequest } from './replay-service.ts';
export { type HeldChoice, RunService } from './run-service.ts';
export { type EngineServices, engineServices, type ServiceParts } from './services.ts';
export { MAX_STATISTICS_RANGE_MS, type StatisticsRange, StatisticsService } from './statistics-service.ts';
export { TenantService } from './tenant-service.ts';
export { UserSettingsService } from './user-settings-service.ts';
export { type NamedValues, PLATFORM, ValueService } from './value-service.ts';
