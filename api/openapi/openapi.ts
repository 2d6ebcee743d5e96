import { environmentNameSchema, PRODUCTION, resourceSchemas } from '../../engine/model/index.ts';
import { operatorScope, tenantScopes } from '../auth/index.ts';
import { json, problem, problemSchema, retryLater } from './answers.ts';
import { exampleOf } from './examples.ts';
import { platformPaths } from './platform-paths.ts';
import { ENVIRONMENT_HEADER, isOperatorRoute, apiTags, type RouteSpec } from '../route-kit/index.ts';

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
  const environment = isOperatorRoute(route)
    ? []
    : [
        {
          name: ENVIRONMENT_HEADER,
          in: 'header',
          required: false,
          description: `The tenant's environment the request works in (default \`${PRODUCTION}\`); see decision 28.`,
          schema: environmentNameSchema,
        },
      ];
  return [...from('path', route.params as never), ...from('query', route.query as never), ...environment, ...headers];
}

/** A route's answers by status: a JSON body of its schema, or, for a refusal (409, 502, ...), a problem. */
export function responsesOf(declared: Record<number, { description: string; schema?: object }>) {
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(declared)) {
    responses[status] = response.schema
      ? { description: response.description, content: json(response.schema) }
      : Number(status) >= 400
        ? problem(response.description)
        : { description: response.description };
  }
  return responses;
}

/**
 * OpenAPI 3.1, generated from the same JSON Schemas the server validates with, with the paths served
 * outside the route table (`extraPaths`: the families' public routes).
 */
export function openApiDocument(routes: RouteSpec[], version: string, extraPaths: Record<string, unknown> = {}) {
  const names = new Map<object, string>(Object.entries(resourceSchemas).map(([name, schema]) => [schema, name]));
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const responses = responsesOf(route.responses);
    if (route.params) responses[404] ??= problem('The path names nothing (of this tenant).');
    if (!isOperatorRoute(route))
      responses[404] ??= problem('The environment header names no environment of the tenant.');
    if (!isOperatorRoute(route) && (route.method === 'put' || route.method === 'post'))
      responses[409] ??= problem(
        'What it would store takes the tenant past a limit on what it keeps (`limit` names the kind, `detail` the setting).',
      );
    if (route.body)
      Object.assign(responses, { 413: problem('The body is over BODY_LIMIT.'), 415: problem('The body is not JSON.') });
    responses[503] ??= retryLater('Redis does not answer (a restart, an outage): retry.');
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
            429: retryLater(
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
      tags: Object.entries(apiTags).map(([name, label]) => ({ name, description: label })),
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
