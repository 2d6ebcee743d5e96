import type { ApiContext } from '../context.ts';
import { defineRoute } from '../route-kit/index.ts';

const maintenanceSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['enabled', 'reason', 'since', 'retryAfterSeconds', 'activeJobs', 'drained'],
  properties: {
    enabled: { type: 'boolean' },
    reason: { type: ['string', 'null'] },
    since: { type: ['string', 'null'], format: 'date-time' },
    retryAfterSeconds: { type: ['integer', 'null'] },
    activeJobs: {
      type: 'integer',
      description: 'Jobs workers are still running (they finish; no new one starts while in maintenance).',
    },
    drained: { type: 'boolean', description: 'In maintenance and no job running: safe to stop the workers.' },
  },
} as const;

const placementSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['tenantId', 'group', 'movingFrom', 'since'],
  properties: {
    tenantId: { type: 'string', description: 'A tenant, or one of its environments (`acme~staging`).' },
    group: { type: 'integer', description: 'The slot group its runs go to (0 to RUN_GROUPS - 1).' },
    movingFrom: {
      type: ['integer', 'null'],
      description: 'While it moves, the group it leaves: its runs wait until none is left executing there.',
    },
    since: { type: ['string', 'null'], format: 'date-time', description: 'When the move under way began.' },
  },
} as const;

const runGroupsPath = '/api/v1/platform/run-groups';
const placementParams = {
  type: 'object',
  required: ['tenantId'],
  properties: { tenantId: { type: 'string', minLength: 1, maxLength: 200 } },
} as const;

/** Platform operations (tag Platform), for operators: maintenance mode and the drain it brings, tenants' run groups. */
export function platformRoutes({ maintenance, queues, moves }: ApiContext) {
  const state = async () => {
    const current = await maintenance.current();
    const activeJobs = await queues.activeRuns();
    return {
      enabled: current !== null,
      reason: current?.reason ?? null,
      since: current?.since ?? null,
      retryAfterSeconds: current?.retryAfterSeconds ?? null,
      activeJobs,
      drained: current !== null && activeJobs === 0,
    };
  };
  const path = '/api/v1/platform/maintenance';
  return [
    defineRoute({
      method: 'get',
      path,
      tag: 'Platform',
      scope: 'platform:admin',
      summary: 'Whether the platform is in maintenance, and whether the workers have drained',
      responses: { 200: { description: 'The maintenance state.', schema: maintenanceSchema } },
      handle: async () => ({ body: await state() }),
    }),
    defineRoute({
      method: 'put',
      path,
      tag: 'Platform',
      scope: 'platform:admin',
      summary: 'Enter maintenance: flow URLs answer 503 with Retry-After, the queues pause (running jobs finish)',
      description:
        'Every process sees it within INTAKE_CACHE_TTL_MS. Deliveries are refused before anything is recorded, so ' +
        'senders retry them after the maintenance. The API stays up.',
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['reason'],
        properties: {
          reason: { type: 'string', minLength: 1, maxLength: 500 },
          retryAfterSeconds: { type: 'integer', minimum: 1, maximum: 86_400, default: 60 },
        },
      },
      responses: { 200: { description: 'The maintenance state.', schema: maintenanceSchema } },
      async handle({ body }) {
        await maintenance.enable({ reason: body.reason, retryAfterSeconds: body.retryAfterSeconds });
        return { body: await state() };
      },
    }),
    defineRoute({
      method: 'delete',
      path,
      tag: 'Platform',
      scope: 'platform:admin',
      summary: 'Leave maintenance: flow URLs accept again, the queues resume',
      responses: { 200: { description: 'The maintenance state.', schema: maintenanceSchema } },
      async handle() {
        await maintenance.disable();
        return { body: await state() };
      },
    }),
    defineRoute({
      method: 'get',
      path: runGroupsPath,
      tag: 'Platform',
      scope: 'platform:admin',
      summary: 'The slot groups of the run path, and the tenants operators moved between them',
      responses: {
        200: {
          description: 'RUN_GROUPS, and the tenants moved (the others go by a hash of their id, or RUN_GROUP_TENANTS).',
          schema: {
            type: 'object',
            additionalProperties: false,
            required: ['groups', 'tenants'],
            properties: { groups: { type: 'integer' }, tenants: { type: 'array', items: placementSchema } },
          },
        },
      },
      handle: async () => ({ body: { groups: moves.groups, tenants: await moves.list() } }),
    }),
    defineRoute({
      method: 'get',
      path: `${runGroupsPath}/tenants/{tenantId}`,
      tag: 'Platform',
      scope: 'platform:admin',
      summary: "A tenant's slot group, and its move under way",
      params: placementParams,
      responses: { 200: { description: "The tenant's group.", schema: placementSchema } },
      handle: async ({ params }) => ({ body: await moves.placement(params.tenantId) }),
    }),
    defineRoute({
      method: 'put',
      path: `${runGroupsPath}/tenants/{tenantId}`,
      tag: 'Platform',
      scope: 'platform:admin',
      summary: "Move a tenant's runs to another slot group of the run path, while it runs",
      description:
        'Answers 202 while the move is under way (GET the tenant until movingFrom is null). Its runs wait meanwhile: ' +
        'new ones are accepted, none starts, those executing finish; then its runs go on in the new group, oldest ' +
        'first, its limits and concurrency keys exact throughout. A tenant in that group already: 200.',
      params: placementParams,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['group'],
        properties: { group: { type: 'integer', minimum: 0 } },
        examples: [{ group: 2 }],
      },
      responses: {
        200: { description: 'The tenant is in that group already.', schema: placementSchema },
        202: { description: 'The move is under way.', schema: placementSchema },
        404: { description: 'No such tenant.' },
        409: { description: 'The tenant is moving to another group.' },
      },
      async handle({ params, body }) {
        const placement = await moves.move(params.tenantId, body.group);
        return { status: placement.movingFrom === null ? 200 : 202, body: placement };
      },
    }),
  ];
}
