import { resourceSchemas } from '../../engine/model/index.ts';
import { operatorScope, tenantScopes } from '../auth/index.ts';
import { exampleOf } from './examples.ts';
import { problemCatalog } from '../http/index.ts';
import { isOperatorRoute, seedTags, type RouteSpec } from '../route-kit/index.ts';

const problemSchema = {
  type: 'object',
  description: 'RFC 9457 problem details. Validation failures list each bad field with its JSON path.',
  required: ['type', 'title', 'status'],
  properties: {
    type: {
      type: 'string',
      enum: problemCatalog.map((problem) => problem.uri),
      description:
        'The kind of problem, stable: branch on it. A URI relative to the server, the entry of the kind in /docs: ' +
        problemCatalog.map((problem) => `${problem.kind} (${problem.status})`).join(', '),
    },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['path', 'message'],
        properties: { path: { type: 'string' }, message: { type: 'string' }, node: { type: 'string' } },
      },
    },
  },
};

export const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});
/** A 429, with the Retry-After header it always carries. */
const tooManyRequests = (description: string) => ({
  ...problem(description),
  headers: { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } } },
});
const readinessSchema = {
  type: 'object',
  required: ['ready', 'failed'],
  properties: {
    ready: { type: 'boolean' },
    failed: { type: 'array', items: { enum: ['store', 'redis', 'redis eviction', 'event loop'] } },
    checks: { type: 'object', description: 'For operators only.' },
  },
};
export const json = (schema: object) => ({ 'application/json': { schema } });

/** Replace every occurrence of a published resource schema by a $ref to it. */
function withRefs(schema: unknown, names: Map<object, string>, root = true): unknown {
  if (schema === null || typeof schema !== 'object') return schema;
  const name = names.get(schema);
  if (name && !root) return { $ref: `#/components/schemas/${name}` };
  if (Array.isArray(schema)) return schema.map((item) => withRefs(item, names, false));
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, withRefs(value, names, false)]));
}

/** Query and path parameters of a route, from its JSON Schemas. */
const hasRequiredFields = (schema: object) => ((schema as { required?: unknown[] }).required ?? []).length > 0;

function parameters(route: RouteSpec) {
  const from = (
    where: 'query' | 'path',
    schema: { properties?: Record<string, object>; required?: readonly string[] } | undefined,
  ) =>
    Object.entries(schema?.properties ?? {}).map(([name, property]) => ({
      name,
      in: where,
      required: where === 'path' || (schema?.required ?? []).includes(name),
      schema: property,
    }));
  const headers = Object.entries(route.headers ?? {}).map(([name, description]) => ({
    name,
    in: 'header',
    required: false,
    description,
    schema: { type: 'string', maxLength: 256 },
  }));
  return [...from('path', route.params as never), ...from('query', route.query as never), ...headers];
}

/**
 * OpenAPI 3.1, generated from the same JSON Schemas the server validates with, with the paths served
 * outside the route table (`extraPaths`: the deprecated adapter's).
 */
export function openApiDocument(routes: RouteSpec[], version: string, extraPaths: Record<string, unknown> = {}) {
  const names = new Map<object, string>(Object.entries(resourceSchemas).map(([name, schema]) => [schema, name]));
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const responses: Record<string, unknown> = {};
    for (const [status, response] of Object.entries(route.responses)) {
      // A route's own error answers (409, 502, ...) are problems like every other.
      responses[status] = response.schema
        ? { description: response.description, content: json(response.schema) }
        : Number(status) >= 400
          ? problem(response.description)
          : { description: response.description };
    }
    if (route.params) responses[404] ??= problem('The path names nothing (of this tenant).');
    if (!isOperatorRoute(route) && (route.method === 'put' || route.method === 'post'))
      responses[409] ??= problem(
        'What it would store takes the tenant past a limit on what it keeps (`limit` names the kind, `detail` the setting).',
      );
    if (route.body)
      Object.assign(responses, { 413: problem('The body is over BODY_LIMIT.'), 415: problem('The body is not JSON.') });
    Object.assign(
      responses,
      isOperatorRoute(route)
        ? {
            400: problem('Invalid request.'),
            401: problem('No, invalid or expired bearer token.'),
            403: problem('Not an operator token.'),
          }
        : {
            400: problem('Invalid request, or the tenant_id header is missing.'),
            401: problem('No, invalid or expired bearer token.'),
            403: problem(
              `The token does not grant this tenant${route.scope ? `, lacks the scope ${route.scope}` : ''}, or the ` +
                'tenant is suspended.',
            ),
            429: tooManyRequests(
              "Over the tenant's API call rate (TENANT_API_CALLS_PER_SECOND, TENANT_API_CALL_BURST): retry after Retry-After seconds.",
            ),
          },
    );
    (paths[route.path] ??= {})[route.method] = {
      tags: [route.tag],
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      operationId: `${route.method}${route.path
        .replace(/^\/api\/v1/, '')
        .replace(/\{(\w+)\}/g, 'By_$1')
        .replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
      // The tenant_id header goes with the token on every tenant route: a client sets both once.
      security: [
        isOperatorRoute(route)
          ? { oauth2: route.scope ? [route.scope] : [] }
          : { oauth2: route.scope ? [route.scope] : [], tenant: [] },
      ],
      parameters: parameters(route),
      // An empty body counts as {}: a body is required only when the schema requires some field.
      ...(route.body ? { requestBody: { required: hasRequiredFields(route.body), content: json(route.body) } } : {}),
      responses,
    };
  }
  Object.assign(paths, platformPaths(), extraPaths);
  const document = withRefs(
    {
      openapi: '3.1.0',
      info: {
        title: 'Tributary API',
        version,
        license: { name: 'Proprietary: all rights reserved', identifier: 'LicenseRef-Tributary-Proprietary' },
        description:
          'Multi-tenant integration runtime. Every /api request carries Authorization: Bearer <token> and tenant_id: ' +
          '<tenant>, except operator routes (scope platform:admin), which act across tenants and name a tenant in ' +
          'the path.',
      },
      jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
      servers: [{ url: '/', description: 'This server (PUBLIC_URL).' }],
      tags: Object.entries(seedTags).map(([name, label]) => ({ name, description: label })),
      paths,
    },
    names,
  ) as Record<string, unknown>;
  return withRequestExamples({
    ...document,
    components: {
      // Each schema in full, naming the others by $ref (replacing it by a $ref to itself would leave nothing).
      schemas: {
        ...Object.fromEntries(Object.entries(resourceSchemas).map(([name, schema]) => [name, withRefs(schema, names)])),
        Problem: problemSchema,
      },
      securitySchemes: {
        tenant: {
          type: 'apiKey',
          in: 'header',
          name: 'tenant_id',
          description: 'The tenant a request works in, beside the bearer token on every tenant route.',
        },
        oauth2: {
          type: 'oauth2',
          description: "OAuth 2.0 client credentials; the token is a JWT validated against the issuer's JWKS.",
          flows: {
            clientCredentials: {
              tokenUrl: '/oauth/token',
              scopes: {
                ...tenantScopes,
                [operatorScope]: 'Operator: every tenant, platform routes, the queue dashboard.',
              },
            },
          },
        },
      },
    },
  });
}

type MediaType = { schema?: object; example?: unknown };
type OpenApiShape = {
  paths: Record<string, Record<string, { requestBody?: { content?: Record<string, MediaType> } }>>;
  components: { schemas: Record<string, object> };
};

/** Every request body shows an example (its schema's own, or one made from it): docs and client generators show it. */
function withRequestExamples<T extends object>(document: T): T {
  const { paths, components } = document as unknown as OpenApiShape;
  const resolve = (ref: string) => components.schemas[ref.slice(ref.lastIndexOf('/') + 1)];
  for (const methods of Object.values(paths))
    for (const operation of Object.values(methods))
      for (const media of Object.values(operation.requestBody?.content ?? {}))
        if (media.schema && media.example === undefined) media.example = exampleOf(media.schema, resolve);
  return document;
}

const tokenRequestSchema = {
  type: 'object',
  required: ['grant_type'],
  properties: {
    grant_type: { const: 'client_credentials' },
    client_id: { type: 'string', description: 'Unless sent in a Basic header.' },
    client_secret: { type: 'string', description: 'Unless sent in a Basic header.' },
    audience: { type: 'string' },
    scope: { type: 'string', description: 'Space-separated scopes asked for.' },
  },
  examples: [
    {
      grant_type: 'client_credentials',
      client_id: 'trb_H-0ZD_1AykL9',
      client_secret: 'the secret printed by tributary client create',
      scope: 'flows:read runs:read',
    },
  ],
} as const;

/** An OAuth error answer (RFC 6749 §5.2). */
const oauthError = (description: string) => ({
  description,
  content: json({
    type: 'object',
    required: ['error'],
    properties: { error: { type: 'string' }, error_description: { type: 'string' } },
  }),
});

/** Routes outside /api: token issuer, flow URLs, health. */
function platformPaths() {
  return {
    '/oauth/token': {
      post: {
        operationId: 'issueToken',
        tags: ['Platform'],
        summary: 'Issue an access token (OAuth 2.0 client credentials)',
        description:
          'The client authenticates with HTTP Basic (client_secret_basic) or in the body (client_secret_post), ' +
          'form-encoded or JSON. `scope` asks for some of the scopes the client holds (all of them when absent); ' +
          'the answer says which were granted. Errors are RFC 6749 §5.2 JSON: `error`, `error_description`.',
        security: [],
        requestBody: {
          required: true,
          content: {
            'application/x-www-form-urlencoded': { schema: tokenRequestSchema },
            'application/json': { schema: tokenRequestSchema },
          },
        },
        responses: {
          200: {
            description: 'A bearer token.',
            content: json({
              type: 'object',
              required: ['access_token', 'token_type', 'expires_in', 'scope'],
              properties: {
                access_token: { type: 'string' },
                token_type: { const: 'Bearer' },
                expires_in: { type: 'integer' },
                scope: { type: 'string', description: 'The scopes granted, space-separated.' },
              },
            }),
          },
          400: oauthError('invalid_request, unsupported_grant_type, invalid_scope or invalid_target.'),
          401: oauthError('invalid_client: unknown client or wrong secret (with WWW-Authenticate for Basic).'),
          429: tooManyRequests('Too many failed attempts for this client or from this address.'),
        },
      },
    },
    '/.well-known/oauth-authorization-server': {
      get: {
        operationId: 'getAuthorizationServerMetadata',
        tags: ['Platform'],
        summary: "The authorization server's metadata (RFC 8414): issuer, token endpoint, JWKS, scopes",
        security: [],
        responses: { 200: { description: 'The metadata.', content: json({ type: 'object' }) } },
      },
    },
    '/.well-known/openid-configuration': {
      get: {
        operationId: 'getOpenIdConfiguration',
        tags: ['Platform'],
        summary: 'The same metadata, where OpenID clients look for it',
        security: [],
        responses: { 200: { description: 'The metadata.', content: json({ type: 'object' }) } },
      },
    },
    '/.well-known/jwks.json': {
      get: {
        operationId: 'getJwks',
        tags: ['Platform'],
        summary: "The issuer's public signing keys",
        security: [],
        responses: { 200: { description: 'A JWK set.' } },
      },
    },
    '/hooks/{tenantId}/{flowKey}': {
      post: {
        operationId: 'deliverToFlowUrl',
        tags: ['Flow'],
        summary: 'A flow URL: start a run of the active version with this message',
        security: [],
        description:
          "Persisted and enqueued before the answer. A repeated Idempotency-Key (or the trigger's delivery id " +
          'header) returns the first message. When the flow has a reply node and the run reaches it within ' +
          'REPLY_WAIT_MS, the answer is that reply (its status, headers and body) instead of 202.',
        parameters: [
          { name: 'tenantId', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'flowKey', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string' } },
        ],
        requestBody: { content: json({ description: 'Any JSON.', examples: [{ id: 1001, total: 25 }] }) },
        responses: {
          202: {
            description: 'Accepted: it will run.',
            content: json({ type: 'object', properties: { messageId: { type: 'string' }, runId: { type: 'string' } } }),
          },
          200: { description: 'A repeated delivery: the first message, nothing new runs.' },
          default: {
            description:
              "The flow's reply (a reply node): the status, headers and body it made, and the ids of the message and " +
              'its run in headers of their own.',
            headers: {
              'X-Tributary-Message-Id': { description: 'The message the delivery became.', schema: { type: 'string' } },
              'X-Tributary-Run-Id': { description: 'The run that replied.', schema: { type: 'string' } },
            },
          },
          401: problem("The delivery fails the trigger's verification."),
          404: problem('No active flow at this URL.'),
          413: problem('The body is over the size limit.'),
          429: tooManyRequests(
            "Over the tenant's intake quota (deliveries per second, or runs waiting to start): nothing was recorded; " +
              'retry after Retry-After seconds.',
          ),
          503: problem('Not stored: retry later.'),
        },
      },
    },
    '/healthz': {
      get: {
        operationId: 'getHealth',
        tags: ['Platform'],
        summary: 'The process is up',
        security: [],
        responses: { 200: { description: 'Up.' } },
      },
    },
    '/readyz': {
      get: {
        operationId: 'getReadiness',
        tags: ['Platform'],
        summary: 'Whether this process can serve: the store and Redis answer, its event loop keeps up',
        description: "Anyone gets `{ready, failed}`; an operator's credentials add the checks' details.",
        security: [],
        responses: {
          200: { description: 'Ready.', content: json(readinessSchema) },
          503: { description: 'Not ready: `failed` names what failed.', content: json(readinessSchema) },
        },
      },
    },
  };
}
