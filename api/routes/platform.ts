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

/** Platform operations (tag Platform), for operators: maintenance mode and the drain it brings. */
export function platformRoutes({ maintenance, queues }: ApiContext) {
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
  ];
}
