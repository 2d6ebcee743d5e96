import { ValidationError, tenantLimitsSchema, tenantSchema } from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, pageQuerySchema, heldChoice, heldOutcomeSchema } from '../route-kit/index.ts';

const base = '/api/v1/tenants';
const tenantParams = { type: 'object', required: ['tenantId'], properties: { tenantId: { type: 'string' } } } as const;

/** Tenant management (tag Tenant): operator routes, across tenants; the tenant is in the path. */
export function tenantRoutes({ tenants }: ApiContext) {
  return [
    defineRoute({
      method: 'post',
      path: base,
      tag: 'Tenant',
      scope: 'platform:admin',
      summary: 'Create a tenant',
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['id'],
        properties: { id: tenantSchema.properties.id, name: { type: 'string', minLength: 1, maxLength: 200 } },
        examples: [{ id: 'acme', name: 'Acme Inc.' }],
      },
      responses: {
        201: { description: 'The tenant.', schema: tenantSchema },
        409: { description: 'A tenant with this id exists already.' },
      },
      handle: async ({ body }) => ({
        status: 201,
        body: await tenants.create({ id: body.id, name: body.name ?? body.id }),
      }),
    }),
    defineRoute({
      method: 'get',
      path: base,
      tag: 'Tenant',
      scope: 'platform:admin',
      summary: 'List tenants by id',
      query: {
        type: 'object',
        additionalProperties: false,
        properties: { ...pageQuerySchema, status: tenantSchema.properties.status },
      },
      responses: { 200: { description: 'A page of tenants.', schema: connectionSchema(tenantSchema) } },
      handle: async ({ query }) => ({ body: await tenants.list({ status: query.status }, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{tenantId}`,
      tag: 'Tenant',
      scope: 'platform:admin',
      summary: 'Get a tenant',
      params: tenantParams,
      responses: { 200: { description: 'The tenant.', schema: tenantSchema } },
      handle: async ({ params }) => ({ body: await tenants.get(params.tenantId) }),
    }),
    defineRoute({
      method: 'post',
      path: `${base}/{tenantId}/suspend`,
      tag: 'Tenant',
      scope: 'platform:admin',
      summary: 'Suspend a tenant',
      description:
        'Its API calls get 403 with the reason; its flow URLs still verify, record and answer deliveries, but the ' +
        'runs are held; its schedules skip.',
      params: tenantParams,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['reason'],
        properties: { reason: { type: 'string', minLength: 1, maxLength: 500 } },
      },
      responses: { 200: { description: 'The suspended tenant.', schema: tenantSchema } },
      handle: async ({ params, body }) => ({ body: await tenants.suspend(params.tenantId, body.reason) }),
    }),
    defineRoute({
      method: 'post',
      path: `${base}/{tenantId}/resume`,
      tag: 'Tenant',
      scope: 'platform:admin',
      summary: 'Resume a suspended tenant',
      params: tenantParams,
      body: { type: 'object', additionalProperties: false, properties: { heldMessages: heldChoice } },
      responses: {
        200: {
          description: 'The tenant, and what became of the held messages.',
          schema: {
            type: 'object',
            required: ['tenant', 'released', 'discarded'],
            properties: { tenant: tenantSchema, ...heldOutcomeSchema.properties },
          },
        },
      },
      handle: async ({ params, body }) => ({ body: await tenants.resume(params.tenantId, body.heldMessages) }),
    }),
    defineRoute({
      method: 'put',
      path: `${base}/{tenantId}/limits`,
      tag: 'Tenant',
      scope: 'platform:admin',
      summary: "Set a tenant's own limits in place of the deployment's",
      description:
        "Replaces every override: a setting left out is the deployment's again (`{}` resets them all). Weight and " +
        'concurrency apply to the next dispatch, the delivery quota to the next delivery, in every process.',
      params: tenantParams,
      body: tenantLimitsSchema,
      responses: { 200: { description: 'The tenant with its limits.', schema: tenantSchema } },
      handle: async ({ params, body }) => ({ body: await tenants.setLimits(params.tenantId, body) }),
    }),
    defineRoute({
      method: 'delete',
      path: `${base}/{tenantId}`,
      tag: 'Tenant',
      scope: 'platform:admin',
      summary: 'Delete a tenant and every record it owns',
      description:
        'Flows, versions, messages, runs, variables, secrets, destinations, batches, clients and schedules. ' +
        'Irreversible: `confirm` must repeat the tenant id.',
      params: tenantParams,
      query: {
        type: 'object',
        additionalProperties: false,
        properties: { confirm: { type: 'string', description: 'The tenant id, again.' } },
      },
      responses: { 204: { description: 'Deleted.' } },
      async handle({ params, query }) {
        if (query.confirm !== params.tenantId) {
          throw new ValidationError('Deletion not confirmed', [
            {
              path: '$.query.confirm',
              message: `must repeat the tenant id (${params.tenantId}) to confirm the deletion`,
            },
          ]);
        }
        await tenants.delete(params.tenantId);
        return { status: 204 };
      },
    }),
  ];
}
