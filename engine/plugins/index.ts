/** The contracts operations, actions and destinations are written to, and their registry. */
export { ACTION_NAME, ACTION_PREFIX, ActionRunner, compileAction } from './actions.ts';
export {
  type DestinationType,
  openDestination,
  type OpenedDestination,
  putDestination,
  type WebhookSubscriber,
  type WebhookSubscription,
} from './destinations.ts';
export {
  type FamilyAnswer,
  type FamilyDelivery,
  type FamilyRequest,
  type FamilyRoute,
  type FamilyRoutePlatform,
  type PublicRoute,
  RouteRefusal,
  type TenantRoute,
} from './family-routes.ts';
export { defineFamily, type FamilyParts, familyParts, type OperationFamily } from './families.ts';
export {
  type BatchHandle,
  defineOperation,
  majorOf,
  type MessageInput,
  type OperationContext,
  type OperationDefinition,
  OperationRegistry,
  type RegisteredOperation,
  StopSignal,
} from './operations.ts';
