import type { JSONSchema } from 'json-schema-to-ts';
import { NotFoundError } from '../../engine/errors.ts';
import type { Page, PageRequest } from '../../engine/store/port.ts';
import type { Scope } from '../auth/scopes.ts';
import { connectionSchema, pageQuerySchema, type RouteSpec, type SeedTag } from '../route.ts';

export interface ByNameCollection<Item> {
  /** `/api/v1/<collection>`; items live at `<base>/{name}`. */
  base: string;
  tag: SeedTag;
  /** Singular and plural, for summaries and messages ("variable", "variables"). */
  noun: [string, string];
  item: JSONSchema & object;
  /** The `{name}` parameter's schema (its pattern differs between collections). */
  nameParams: JSONSchema & object;
  scopes: { read: Scope; write: Scope };
  list(tenantId: string, page: PageRequest): Promise<Page<Item>>;
  /** Absent for write-only collections. */
  get?(tenantId: string, name: string): Promise<Item | undefined>;
  remove(tenantId: string, name: string): Promise<boolean>;
}

/** List, get and delete routes of a tenant's resources addressed by name (variables, secrets, destinations). */
export function byNameRoutes<Item>(collection: ByNameCollection<Item>): RouteSpec[] {
  const { base, tag, noun: [one, many], scopes } = collection;
  const nameOf = (params: unknown) => (params as { name: string }).name;
  const routes: RouteSpec[] = [{
    method: 'get', path: base, tag, scope: scopes.read, summary: `List ${many} by name`,
    query: { type: 'object', additionalProperties: false, properties: pageQuerySchema },
    responses: { 200: { description: `A page of ${many}.`, schema: connectionSchema(collection.item) } },
    handle: async ({ tenantId, query }) => ({ body: await collection.list(tenantId, query as PageRequest) }),
  }];
  const get = collection.get;
  if (get) {
    routes.push({
      method: 'get', path: `${base}/{name}`, tag, scope: scopes.read, summary: `Get a ${one}`, params: collection.nameParams,
      responses: { 200: { description: `The ${one}.`, schema: collection.item } },
      async handle({ tenantId, params }) {
        const item = await get(tenantId, nameOf(params));
        if (!item) throw new NotFoundError(`no ${one} ${nameOf(params)}`);
        return { body: item };
      },
    });
  }
  routes.push({
    method: 'delete', path: `${base}/{name}`, tag, scope: scopes.write, summary: `Delete a ${one}`, params: collection.nameParams,
    responses: { 204: { description: 'Deleted.' } },
    async handle({ tenantId, params }) {
      if (!(await collection.remove(tenantId, nameOf(params)))) throw new NotFoundError(`no ${one} ${nameOf(params)}`);
      return { status: 204 };
    },
  });
  return routes;
}
