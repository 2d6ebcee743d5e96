import express, { Router, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import type { FamilyRoute, FamilyRoutePlatform, PublicRoute, TenantRoute } from '../../engine/plugins/index.ts';
import { RouteRefusal } from '../../engine/plugins/index.ts';
import { isTerminal } from '../../engine/store/index.ts';
import type { ApiContext } from '../context.ts';
import { type Scope, tenantScopes } from '../auth/index.ts';
import { accepted, checkedBody, watchRun } from '../flow-url/index.ts';
import { HttpProblem } from '../http/index.ts';
import { responsesOf } from '../openapi/index.ts';
import { type ApiTag, apiTags, type RouteSpec } from '../route-kit/index.ts';

/**
 * The routes operation families serve (engine/plugins/family-routes.ts), on the API: their tenant routes in the
 * route table, their public routes on a router of their own, their refusals as problems.
 */

/** What the platform does for them, from the engine's services; a delivery not stored is logged with its cause. */
export function familyRoutePlatform(context: ApiContext, waitMs: number, logger: Logger): FamilyRoutePlatform {
  return {
    url: (path) => `${context.baseUrl()}${path}`,
    secretMatches: (tenantId, name, candidate) => context.values.secretMatches(tenantId, name, candidate),
    putSecret: async (tenantId, name, value) => void (await context.values.putSecret(tenantId, name, value)),
    installedFlow: (tenantId, document) => context.flows.installed(tenantId, document),
    putDestination: async (tenantId, name, body) => void (await context.destinations.put(tenantId, name, body)),
    checkedJson: (body, contentType) => checkedBody(context.intake, body, contentType),
    async deliver({ headers, ...delivery }) {
      const result = await accepted(context.intake, { ...delivery, headers, query: {} }, (error) =>
        logger.error({ err: error, flowKey: delivery.flowKey }, 'intake failed'),
      );
      return result.outcome === 'no-flow' ? undefined : { messageId: result.messageId, runId: result.runId };
    },
    finishedRun: (tenantId, runId) =>
      watchRun(context.store, tenantId, runId, waitMs, ({ run }) => isTerminal(run.status)),
  };
}

const asProblem = (error: unknown) =>
  error instanceof RouteRefusal ? new HttpProblem(error.status, error.title, error.message, error.extra) : error;

/** The families' tenant routes, declared as the API's own. */
export function familyTenantRoutes(routes: FamilyRoute[], platform: FamilyRoutePlatform): RouteSpec[] {
  return routes
    .filter((route): route is TenantRoute => route.access === 'tenant')
    .map(
      (route): RouteSpec => ({
        method: route.method,
        path: route.path,
        tag: knownTag(route),
        scope: tenantScope(route),
        summary: route.summary,
        description: route.description,
        responses: route.responses,
        handle: ({ tenantId }) =>
          route.handle({ tenantId }, platform).catch((error) => Promise.reject(asProblem(error))),
      }),
    );
}

/** A family's route is a tenant's: it needs one of the tenant scopes, never the operator's. */
function tenantScope(route: TenantRoute): Scope {
  if (!Object.hasOwn(tenantScopes, route.scope))
    throw new Error(`the route ${route.path} needs the scope ${route.scope}, which is not a tenant scope`);
  return route.scope as Scope;
}

function knownTag(route: FamilyRoute): ApiTag {
  if (!Object.hasOwn(apiTags, route.tag)) throw new Error(`the route ${route.path} names the unknown tag ${route.tag}`);
  return route.tag as ApiTag;
}

/** The families' public routes: the body as it came (up to BODY_LIMIT), the route's headers on every answer. */
export function publicFamilyRoutes(routes: FamilyRoute[], platform: FamilyRoutePlatform, bodyLimitBytes: number) {
  const router = Router();
  for (const route of routes) {
    if (route.access !== 'public') continue;
    router[route.method](
      route.path.replace(/\{(\w+)\}/g, ':$1'),
      (_req, res, next) => {
        if (route.headers) res.set(route.headers);
        next();
      },
      express.raw({ type: () => true, limit: bodyLimitBytes }),
      async (req: Request, res: Response) => {
        const request = {
          params: req.params as Record<string, string>,
          header: (name: string) => req.get(name),
          body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
        };
        const answer = await route.handle(request, platform).catch((error) => Promise.reject(asProblem(error)));
        res.status(answer.status).json(answer.body);
      },
    );
  }
  return router;
}

/** The families' public routes in `/openapi.json` (the route table lists their tenant routes). */
export function publicRoutePaths(routes: FamilyRoute[]): Record<string, Record<string, unknown>> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    if (route.access !== 'public') continue;
    (paths[route.path] ??= {})[route.method] = operationOf(route);
  }
  return paths;
}

const operationOf = (route: PublicRoute) => ({
  operationId: route.operationId,
  tags: [knownTag(route)],
  ...(route.deprecated ? { deprecated: true } : {}),
  security: [],
  summary: route.summary,
  description: route.description,
  parameters: route.parameters,
  requestBody: { content: { 'application/json': { schema: { description: route.body } } } },
  responses: responsesOf(route.responses),
});
