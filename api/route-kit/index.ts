/**
 * How a route is declared and mounted (schemas, scope, answer), collections by name, shapes several routes share.
 */
export { byNameRoutes } from './by-name.ts';
export { namedValueRoutes, nameParams } from './named-values.ts';
export { fieldErrorSchema, heldChoice, heldOutcomeSchema, idParams } from './params.ts';
export {
  connectionSchema,
  defineRoute,
  ENVIRONMENT_HEADER,
  fromRequest,
  isOperatorRoute,
  mountRoutes,
  pageQuerySchema,
  type RouteSpec,
  type ApiTag,
  apiTags,
  wholeList,
} from './route.ts';
