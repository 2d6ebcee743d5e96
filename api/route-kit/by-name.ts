import type { JSONSchema } from 'json-schema-to-ts';
import { NotFoundError } from '../../engine/model/index.ts';
import type { NamedRecords } from '../../engine/services/index.ts';
import type { PageRequest } from '../../engine/store/index.ts';
import type { Scope } from '../auth/index.ts';
import { connectionSchema, pageQuerySchema, type RouteSpec, type ApiTag } from './route.ts';

export interface ByNameCollection<Item> {
  /** `/api/v1/<collection>`; items live at `<base>/{name}`. */
  base: string;
  tag: ApiTag;
  /** Singular and plural, for summaries and messages ("variable", "variables"). */
  noun: [string, string];
  item: JSONSchema & object;
  /** The `{name}` parameter's schema (its pattern differs between collections). */
  nameParams: JSONSchema & object;
  scopes: { read: Scope; write: Scope };
  /** Whose items the route reaches: the tenant_id header's tenant unless this says otherwise (e.g. from the path). */
  owner?(request: { tenantId: string; params: unknown }): Promise<string>;
  /** The engine's records the routes list, read and delete. */
  records: NamedRecords<Item>;
}

/** List, get and delete routes of a tenant's resources addressed by name (variables, secrets, destinations). */
export function byNameRoutes<Item>(collection: ByNameCollection<Item>): RouteSpec[] {
  const {
    base,
    tag,
    noun: [one, many],
    scopes,
  } = collection;
  const nameOf = (params: unknown) => (params as { name: string }).name;
  const ownerOf = collection.owner ?? (async ({ tenantId }) => tenantId);
  // The list's own path parameters: those of an item but `name` (e.g. `{tenantId}`).
  const { name: _name, ...baseProperties } = (collection.nameParams as { properties: Record<string, JSONSchema> })
    .properties;
  const baseParams =
    Object.keys(baseProperties).length === 0
      ? undefined
      : ({ type: 'object', required: Object.keys(baseProperties), properties: baseProperties } as const);
  const routes: RouteSpec[] = [
    {
      method: 'get',
      path: base,
      tag,
      scope: scopes.read,
      summary: `List ${many} by name`,
      params: baseParams,
      query: { type: 'object', additionalProperties: false, properties: pageQuerySchema },
      responses: { 200: { description: `A page of ${many}.`, schema: connectionSchema(collection.item) } },
      handle: async (request) => ({
        body: await collection.records.list(await ownerOf(request), request.query as PageRequest),
      }),
    },
  ];
  const get = collection.records.get?.bind(collection.records);
  if (get) {
    routes.push({
      method: 'get',
      path: `${base}/{name}`,
      tag,
      scope: scopes.read,
      summary: `Get a ${one}`,
      params: collection.nameParams,
      responses: { 200: { description: `The ${one}.`, schema: collection.item } },
      async handle(request) {
        const { params } = request;
        const item = await get(await ownerOf(request), nameOf(params));
        if (!item) throw new NotFoundError(`no ${one} ${nameOf(params)}`);
        return { body: item };
      },
    });
  }
  routes.push({
    method: 'delete',
    path: `${base}/{name}`,
    tag,
    scope: scopes.write,
    summary: `Delete a ${one}`,
    params: collection.nameParams,
    responses: { 204: { description: 'Deleted.' } },
    async handle(request) {
      const { params } = request;
      if (!(await collection.records.remove(await ownerOf(request), nameOf(params))))
        throw new NotFoundError(`no ${one} ${nameOf(params)}`);
      return { status: 204 };
    },
  });
  return routes;
}
