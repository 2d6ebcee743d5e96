import { NotFoundError, runSchema, runStatuses, stepSchema } from '../../engine/model/index.ts';
import { runResult } from '../../engine/store/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, pageQuerySchema } from '../route.ts';
import { idParams } from './editable-flows.ts';

export function runRoutes({ store }: ApiContext) {
  const base = '/api/v1/runs';
  return [
    defineRoute({
      method: 'get',
      path: base,
      tag: 'MessageInfo',
      scope: 'runs:read',
      summary: 'List runs, newest first',
      query: {
        type: 'object',
        additionalProperties: false,
        properties: {
          ...pageQuerySchema,
          flowId: { type: 'string', format: 'uuid' },
          status: { enum: runStatuses },
          parentRunId: { type: 'string', format: 'uuid', description: "The runs this run's call nodes started." },
        },
      },
      responses: { 200: { description: 'A page of runs.', schema: connectionSchema(runSchema) } },
      handle: async ({ tenantId, query }) => ({
        body: await store.listRuns(
          tenantId,
          { flowId: query.flowId, status: query.status, parentRunId: query.parentRunId },
          { first: query.first, after: query.after },
        ),
      }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{id}`,
      tag: 'MessageInfo',
      scope: 'runs:read',
      summary: 'Get a run with its steps (status, attempts, timing, output or error of each node; secrets redacted)',
      params: idParams,
      responses: {
        200: {
          description: 'The run.',
          schema: {
            type: 'object',
            properties: {
              ...runSchema.properties,
              steps: { type: 'array', items: stepSchema },
              result: {
                description:
                  'The output of the last node the run ran (a call node gets it from the run it called); null before.',
              },
            },
          },
        },
      },
      async handle({ tenantId, params }) {
        const found = await store.getRun(tenantId, params.id);
        if (!found) throw new NotFoundError(`no run ${params.id}`);
        return { body: { ...found.run, steps: found.steps, result: runResult(found.steps) } };
      },
    }),
  ];
}
