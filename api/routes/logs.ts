import { logLevels, runLogSchema } from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, pageQuerySchema } from '../route-kit/index.ts';

/** What operations logged during runs (tag Logs). */
export function logRoutes({ store }: ApiContext) {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/logs',
      tag: 'Logs',
      scope: 'runs:read',
      summary: 'Search what operations logged during runs, newest first',
      description:
        'Lines of level info and above, secrets redacted, at most 200 per run; kept RUN_LOG_RETENTION_DAYS days.',
      query: {
        type: 'object',
        additionalProperties: false,
        properties: {
          ...pageQuerySchema,
          flowId: { type: 'string', format: 'uuid' },
          runId: { type: 'string', format: 'uuid' },
          level: { enum: logLevels, description: 'This level and above.' },
          from: { type: 'string', format: 'date-time' },
          to: { type: 'string', format: 'date-time' },
          text: {
            type: 'string',
            minLength: 1,
            maxLength: 200,
            description: 'Lines whose message contains it (case-insensitive).',
          },
        },
      },
      responses: { 200: { description: 'A page of log lines.', schema: connectionSchema(runLogSchema) } },
      handle: async ({ tenantId, query }) => ({ body: await store.listRunLogs(tenantId, query, query) }),
    }),
  ];
}
