/**
 * The use cases: what a tenant or an operator does (publish a flow, delete a tenant, replay, test an alert
 * channel), each a method of a service named for its concept, testable without HTTP. The API's routes call them,
 * as `engineServices` builds them.
 */
export { ALERT_TEST_TIMEOUT_MS } from './alert-service.ts';
export type { FixtureDifference, FixtureResult } from './fixture-service.ts';
export {
  FLOW_FILE_SUFFIX,
  type FlowFile,
  type FlowFileChange,
  FlowFileService,
  MAX_PUSHED_FILES,
  type Promotion,
  type PushResult,
} from './flow-file-service.ts';
export { FlowService, type FlowReview } from './flow-service.ts';
export { DEFAULT_POLL_OVERLAP_MS } from './incremental-field-service.ts';
export type { NamedRecords } from './named-records.ts';
export { ReplayService } from './replay-service.ts';
export type { RunService } from './run-service.ts';
export { type EngineServices, engineServices } from './services.ts';
export { MAX_STATISTICS_RANGE_MS } from './statistics-service.ts';
export { TestRunService } from './test-run-service.ts';
export { type NamedValues, PLATFORM } from './value-service.ts';
