import { variableSchema } from '../../engine/model/index.ts';
import type { NamedValues } from '../../engine/services/index.ts';
import type { Variable } from '../../engine/store/index.ts';
import { byNameRoutes, type ByNameCollection } from './by-name.ts';
import type { RouteSpec } from './route.ts';

/** A named value's path parameter. */
export const nameParams = {
  type: 'object',
  required: ['name'],
  properties: {
    name: {
      type: 'string',
      pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$',
      description: 'Referenced in flows as $vars.<name>, $secrets.<name> or $platform.<name>.',
    },
  },
} as const;

/** Named JSON values (variables, platform values): create-or-replace, list, get, delete. */
export function namedValueRoutes(
  collection: Omit<ByNameCollection<Variable>, 'item' | 'nameParams' | 'records'> & {
    /** The path parameters, when the base has more than `{name}`. */
    params?: ByNameCollection<Variable>['nameParams'];
    records: NamedValues;
    summary: string;
  },
): RouteSpec[] {
  const ownerOf = collection.owner ?? (async ({ tenantId }) => tenantId);
  const put: RouteSpec = {
    method: 'put',
    path: `${collection.base}/{name}`,
    tag: collection.tag,
    scope: collection.scopes.write,
    summary: collection.summary,
    params: collection.params ?? nameParams,
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['value'],
      properties: { value: { description: 'Any JSON value.' } },
      examples: [{ value: 'https://erp.example.com/api' }],
    },
    responses: {
      200: { description: 'Replaced.', schema: variableSchema },
      201: { description: 'Created.', schema: variableSchema },
    },
    async handle(request) {
      const { params, body } = request as { params: { name: string }; body: { value: unknown } };
      const { variable, created } = await collection.records.put(await ownerOf(request), params.name, body.value);
      return { status: created ? 201 : 200, body: variable };
    },
  };
  return [put, ...byNameRoutes({ ...collection, item: variableSchema, nameParams: collection.params ?? nameParams })];
}
