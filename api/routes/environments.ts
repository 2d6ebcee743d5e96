import { environmentNameSchema, environmentSchema } from '../../engine/model/index.ts';
import type { Principal } from '../auth/index.ts';
import { HttpProblem } from '../http/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, wholeList } from '../route-kit/index.ts';

const base = '/api/v1/environments';
const nameParams = { type: 'object', required: ['name'], properties: { name: environmentNameSchema } } as const;

/** A client limited to environments works in those: it neither makes nor removes one. */
function unlimited(principal: Principal) {
  if (principal.environments)
    throw new HttpProblem(403, 'Forbidden', 'the token is limited to environments: it cannot make or remove one');
}

/**
 * A tenant's environments (tag Tenant, decision 28): the tenant's own routes, whichever environment the request is
 * in.
 */
export function environmentRoutes({ environments }: ApiContext) {
  return [
    defineRoute({
      method: 'get',
      path: base,
      tag: 'Tenant',
      summary: "The tenant's environments",
      description: 'Production first (it always exists), then the others by name.',
      responses: { 200: { description: 'Every environment.', schema: connectionSchema(environmentSchema) } },
      handle: async ({ tenant }) => ({ body: wholeList(await environments.list(tenant)) }),
    }),
    defineRoute({
      method: 'post',
      path: base,
      tag: 'Tenant',
      scope: 'environments:write',
      summary: 'Create an environment',
      description:
        'An empty environment: flows, variables, secrets and destinations are made in it (the `environment` header) ' +
        "or promoted into it. It has the tenant's status and limits, each of its own.",
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['name'],
        properties: { name: environmentNameSchema },
        examples: [{ name: 'staging' }],
      },
      responses: {
        201: { description: 'The environment.', schema: environmentSchema },
        409: { description: 'It exists already, or the tenant has as many environments as it may.' },
      },
      async handle({ tenant, principal, body }) {
        unlimited(principal);
        return { status: 201, body: await environments.create(tenant, body.name) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: `${base}/{name}`,
      tag: 'Tenant',
      scope: 'environments:write',
      summary: 'Delete an environment and everything kept in it',
      params: nameParams,
      responses: {
        204: { description: 'Deleted: its flows, values, destinations, messages and runs with it.' },
        409: { description: 'Production: it goes only with its tenant.' },
      },
      async handle({ tenant, principal, params }) {
        unlimited(principal);
        await environments.delete(tenant, params.name);
        return { status: 204 };
      },
    }),
  ];
}
