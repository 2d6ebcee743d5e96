import { NotFoundError, runSchema, runStatuses, stepSchema } from '../../engine/model/index.ts';
import { isTerminal, runResult } from '../../engine/store/index.ts';
import { watchRun } from '../flow-url/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, pageQuerySchema, idParams } from '../route-kit/index.ts';
import { DEFAULT_LINK_SECONDS, MAX_LINK_SECONDS, RUN_PAGES_PATH, RunPageLinks } from '../auth/index.ts';

/** The longest a run read waits for the run to end. */
const MAX_WAIT_SECONDS = 30;

export function runRoutes({ store, keyring, baseUrl }: ApiContext) {
  const base = '/api/v1/runs';
  const links = new RunPageLinks(keyring);
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
      description:
        'With `wait`, the answer waits (up to that many seconds) for the run to end, and is the run as it is then: ' +
        'read the outcome of a delivery just sent without polling.',
      params: idParams,
      query: {
        type: 'object',
        additionalProperties: false,
        properties: {
          wait: { type: 'integer', minimum: 0, maximum: MAX_WAIT_SECONDS, default: 0, description: 'Seconds.' },
        },
      },
      responses: {
        200: {
          description: 'The run.',
          schema: {
            type: 'object',
            required: [...runSchema.required, 'steps', 'result'],
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
      async handle({ tenantId, params, query }) {
        const found = await watchRun(store, tenantId, params.id, query.wait * 1000, ({ run }) =>
          isTerminal(run.status),
        );
        if (!found) throw new NotFoundError(`no run ${params.id}`);
        return { body: { ...found.run, steps: found.steps, result: runResult(found.steps) } };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${base}/{id}/page-link`,
      tag: 'MessageInfo',
      scope: 'runs:read',
      summary:
        "A short-lived link to the run's page: its graph, each node's status, attempts, timing, output and error",
      description:
        'Whoever holds the link sees the page until it expires, without signing in: hand it to a person, never to a ' +
        "log. The page has a button that replays the run's message when the caller may replay (scope " +
        '`messages:write`). Outputs are shown as stored: secrets redacted.',
      params: idParams,
      body: {
        type: 'object',
        additionalProperties: false,
        properties: {
          expiresInSeconds: {
            type: 'integer',
            minimum: 60,
            maximum: MAX_LINK_SECONDS,
            default: DEFAULT_LINK_SECONDS,
            description: 'How long the link opens the page.',
          },
        },
        examples: [{ expiresInSeconds: DEFAULT_LINK_SECONDS }],
      },
      responses: {
        201: {
          description: 'The link.',
          schema: {
            type: 'object',
            additionalProperties: false,
            required: ['url', 'expiresAt', 'canReplay'],
            properties: {
              url: { type: 'string', description: 'The page, under the public URL.' },
              expiresAt: { type: 'string', format: 'date-time' },
              canReplay: { type: 'boolean', description: "Whether the page can replay the run's message." },
            },
          },
        },
      },
      async handle({ tenantId, params, body, principal }) {
        const found = await store.getRun(tenantId, params.id);
        if (!found) throw new NotFoundError(`no run ${params.id}`);
        const expiresAt = Math.floor(Date.now() / 1000) + body.expiresInSeconds;
        const canReplay = principal.scopes.has('messages:write');
        const token = links.token({ tenantId, runId: found.run.id, expiresAt, canReplay });
        return {
          status: 201,
          body: {
            url: `${baseUrl()}${RUN_PAGES_PATH}/${token}`,
            expiresAt: new Date(expiresAt * 1000).toISOString(),
            canReplay,
          },
        };
      },
    }),
  ];
}
