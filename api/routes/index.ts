/**
 * The API's routes, one module per resource: each validates its input, calls one engine service and shapes the
 * answer.
 */
export { actionRoutes } from './actions.ts';
export { alertRoutes } from './alerts.ts';
export { batchRoutes } from './batches.ts';
export { dataSpaceRoutes } from './data-spaces.ts';
export { destinationRoutes } from './destinations.ts';
export { editableFlowRoutes } from './editable-flows.ts';
export { environmentRoutes } from './environments.ts';
export { flowFileRoutes } from './flow-files.ts';
export { flowRoutes } from './flows.ts';
export { incrementalFieldRoutes } from './incremental-fields.ts';
export { logRoutes } from './logs.ts';
export { blockedTopicRoutes, messageRoutes } from './messages.ts';
export { metadataRoutes, operationInfos } from './metadata.ts';
export { platformValueRoutes } from './platform-values.ts';
export { platformRoutes } from './platform.ts';
export { queueRoutes } from './queues.ts';
export { replayRoutes } from './replays.ts';
export { runRoutes } from './runs.ts';
export { statisticsRoutes } from './statistics.ts';
export { tenantRoutes } from './tenants.ts';
export { testRunRoutes } from './test-runs.ts';
export { userSettingsRoutes } from './user-settings.ts';
export { secretRoutes, variableRoutes } from './variables.ts';
export { versionRoutes } from './version.ts';
