import { Router, type Request, type Response } from 'express';
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import {
  environmentId,
  environmentNameSchema,
  PRODUCTION,
  rerooted,
  SchemaValidator,
  stringifyJson,
} from '../../engine/model/index.ts';
import {
  authorize,
  type Principal,
  type TokenVerifier,
  operatorScope,
  type Scope,
  type ApiCallLimit,
} from '../auth/index.ts';
import type { Tenant, TenantStore } from '../../engine/store/index.ts';
import { HttpProblem, checkedBody } from '../http/index.ts';

/** The API's tags, each with its label ([glossary](../../docs/glossary.md)). */
export const apiTags = {
  // The one tag Tributary adds (decision 25).
  Alert: 'alerts to the tenant (channels, rules, what was sent)',
  Batch: 'batch processing',
  BatchTask: 'batch task management',
  BlockedTopic: 'blocked topics',
  Dashboard: 'dashboards',
  DataSpace: 'data spaces',
  Destination: 'destination configuration',
  EditableFlow: 'flow editing',
  Flow: 'flow management',
  GlobalVariable: 'global variables',
  IngressIncrementalField: 'incremental fields',
  Logs: 'logging and monitoring',
  LowCodeAction: 'low-code actions',
  MessageInfo: 'message information',
  MessageQueue: 'message queues',
  Metadata: 'metadata',
  Platform: 'platform operations',
  PlatformGlobal: 'global platform settings',
  PlatformTenantGlobal: 'tenant-specific platform settings',
  Queue: 'queues',
  SecretGlobalVariable: 'secret variables',
  Statistic: 'statistics and analytics',
  Tenant: 'tenant management',
  Test: 'testing',
  UserSettings: 'user settings',
  Version: 'version information',
} as const;
export type ApiTag = keyof typeof apiTags;

type Schema = JSONSchema & object;
type Infer<S> = S extends Schema ? FromSchema<S> : undefined;

export interface RouteContext<Body, Query, Params> {
  body: Body;
  query: Query;
  params: Params;
  /**
   * The id the request's records are kept under: the tenant_id header's tenant in the environment header's
   * environment (decision 28); empty on operator routes, which name their tenant in the path if any.
   */
  tenantId: string;
  /** The tenant_id header's tenant, whichever its environment; empty on operator routes. */
  tenant: string;
  /** The environment the request works in (the environment header, production by default). */
  environment: string;
  principal: Principal;
  req: Request;
}

export interface RouteResult {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface RouteSpec<
  B extends Schema | undefined = Schema | undefined,
  Q extends Schema | undefined = Schema | undefined,
  P extends Schema | undefined = Schema | undefined,
> {
  method: 'get' | 'post' | 'put' | 'delete';
  /** OpenAPI style: `/api/v1/flows/{id}`. */
  path: string;
  tag: ApiTag;
  summary: string;
  description?: string;
  /**
   * The scope the token needs; none: any token for the tenant. The operator scope makes an
   * operator route: across tenants, without the tenant_id header.
   */
  scope?: Scope;
  params?: P;
  query?: Q;
  /**
   * The body keeps integers beyond 2^53 - 1 as the strings of their digits, as a flow URL does (a test run's
   * webhook body); other routes refuse them.
   */
  keepsLargeIntegers?: boolean;
  /** Optional request headers the route reads (from `req`), for the OpenAPI document. */
  headers?: Record<string, string>;
  body?: B;
  responses: Record<number, { description: string; schema?: Schema }>;
  handle(ctx: RouteContext<NoInfer<Infer<B>>, NoInfer<Infer<Q>>, NoInfer<Infer<P>>>): Promise<RouteResult>;
}

/** A tenant API route: bearer token, `tenant_id` header, scope, validated params, query and body. */
export function defineRoute<
  const B extends Schema | undefined = undefined,
  const Q extends Schema | undefined = undefined,
  const P extends Schema | undefined = undefined,
>(spec: RouteSpec<B, Q, P>): RouteSpec {
  return spec as unknown as RouteSpec;
}

/**
 * A use case run on part of the request (`$.body`, `$.body.document`, `$.query`, `$.headers`): the fields its errors
 * name from their input's root are named from the request's.
 */
export async function fromRequest<T>(prefix: string, useCase: () => Promise<T>): Promise<T> {
  try {
    return await useCase();
  } catch (error) {
    throw rerooted(error, prefix);
  }
}

/** The request header naming the environment a tenant route works in (decision 28). */
export const ENVIRONMENT_HEADER = 'environment';
const environmentNamePattern = new RegExp(environmentNameSchema.pattern);

export const isOperatorRoute = (route: Pick<RouteSpec, 'scope'>) => route.scope === operatorScope;

/**
 * Registers routes on a router; validation errors name each bad field (`$.body.nodes[0].id`).
 * A tenant route needs the tenant_id header of an existing tenant and a token that grants it.
 */
export function mountRoutes(
  routes: RouteSpec[],
  verifier: TokenVerifier,
  store: TenantStore,
  apiCalls: ApiCallLimit,
): Router {
  const router = Router();
  for (const route of routes) {
    const validators = {
      params: route.params && new SchemaValidator(route.params, 'path parameters', { coerce: true, storable: true }),
      query: route.query && new SchemaValidator(route.query, 'query parameters', { coerce: true, storable: true }),
      body: route.body && new SchemaValidator(route.body, 'request body', { storable: true }),
    };
    router[route.method](route.path.replace(/\{(\w+)\}/g, ':$1'), async (req: Request, res: Response) => {
      const principal = await verifier.verify(req.get('authorization'));
      const tenant = isOperatorRoute(route) ? '' : (req.get('tenant_id') ?? '');
      const environment = requestedEnvironment(req);
      if (isOperatorRoute(route)) {
        if (!principal.operator)
          throw new HttpProblem(
            403,
            'Forbidden',
            `an operator route: it needs an operator token (scope ${operatorScope})`,
          );
      } else if (!tenant) {
        throw new HttpProblem(400, 'Missing tenant', 'every request needs the header tenant_id: <tenant id>', {
          errors: [{ path: '$.headers.tenant_id', message: 'is required' }],
        });
      } else {
        authorize(principal, tenant, environment, route.scope);
        const record = await activeTenant(store, tenant, environment, principal);
        if (!principal.operator) await apiCalls.admit(record);
      }
      const tenantId = tenant && environmentId(tenant, environment);
      const params = validators.params ? validators.params.validate({ ...req.params }, '$.params') : req.params;
      const query = validators.query ? validators.query.validate({ ...(req.query as object) }, '$.query') : {};
      const body = validators.body
        ? validators.body.validate(requestBody(req, route.keepsLargeIntegers ?? false), '$.body')
        : undefined;
      const result = await route.handle({
        body,
        query,
        params,
        tenantId,
        tenant,
        environment,
        principal,
        req,
      } as RouteContext<never, never, never>);
      if (result.headers) res.set(result.headers);
      if (result.body === undefined) res.status(result.status ?? 204).end();
      else
        res
          .status(result.status ?? 200)
          .type('json')
          .send(stringifyJson(result.body));
    });
  }
  return router;
}

/** The environment header's value: production when absent. */
function requestedEnvironment(req: Request): string {
  const environment = req.get(ENVIRONMENT_HEADER) ?? PRODUCTION;
  if (!environmentNamePattern.test(environment))
    throw new HttpProblem(400, 'Invalid environment', `${ENVIRONMENT_HEADER} names an environment of the tenant`, {
      errors: [{ path: `$.headers.${ENVIRONMENT_HEADER}`, message: `does not match ${environmentNameSchema.pattern}` }],
    });
  return environment;
}

/**
 * The tenant in the environment; its own clients are refused while it is suspended or gone, operators may look into
 * a suspended one.
 */
async function activeTenant(
  store: TenantStore,
  tenantId: string,
  environment: string,
  principal: Principal,
): Promise<Tenant> {
  const tenant = await store.getTenant(environmentId(tenantId, environment));
  if (!tenant && environment !== PRODUCTION && (await store.getTenant(tenantId)))
    throw new HttpProblem(404, 'No such environment', `tenant ${tenantId} has no environment ${environment}`, {
      errors: [{ path: `$.headers.${ENVIRONMENT_HEADER}`, message: 'names no environment of the tenant' }],
    });
  if (!tenant)
    throw principal.operator
      ? new HttpProblem(404, 'No such tenant', `there is no tenant ${tenantId}`)
      : new HttpProblem(403, 'Forbidden', `tenant ${tenantId} does not exist`);
  if (tenant.status === 'suspended' && !principal.operator) {
    throw new HttpProblem(
      403,
      'Tenant suspended',
      `tenant ${tenantId} is suspended: ${tenant.suspendedReason ?? 'no reason given'}`,
    );
  }
  return tenant;
}

/** The parsed JSON body; an empty request counts as `{}`, any other media type is refused. */
function requestBody(req: Request, keepsLargeIntegers: boolean): unknown {
  if (req.body !== undefined) return checkedBody(req, keepsLargeIntegers);
  const empty = req.headers['transfer-encoding'] === undefined && (req.headers['content-length'] ?? '0') === '0';
  if (empty) return {};
  throw new HttpProblem(415, 'Unsupported media type', 'send the body as application/json');
}

/** `first`/`after` paging, the same on every list. */
export const MAX_PAGE_SIZE = 200;
export const DEFAULT_PAGE_SIZE = 50;
export const pageQuerySchema = {
  first: {
    type: 'integer',
    minimum: 1,
    maximum: MAX_PAGE_SIZE,
    default: DEFAULT_PAGE_SIZE,
    description: `Page size (at most ${MAX_PAGE_SIZE}).`,
  },
  after: { type: 'string', maxLength: 400, description: 'The endCursor of the previous page.' },
} as const;

/** A short list that always comes whole (the operations, the queues), in the same connection shape. */
export const wholeList = <T>(nodes: T[]) => ({ nodes, pageInfo: { hasNextPage: false, endCursor: null } });

/** A connection (docs/glossary.md) of `item`. */
export function connectionSchema<const Item extends Schema>(item: Item) {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['nodes', 'pageInfo'],
    properties: {
      nodes: { type: 'array', items: item },
      pageInfo: {
        type: 'object',
        additionalProperties: false,
        required: ['hasNextPage', 'endCursor'],
        properties: { hasNextPage: { type: 'boolean' }, endCursor: { type: ['string', 'null'] } },
      },
    },
  } as const;
}
