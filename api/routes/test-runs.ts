import { type Fixture, fixtureSchema, stepSchema } from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import { defineRoute, fromRequest, idParams } from '../route-kit/index.ts';

const testResultSchema = {
  type: 'object',
  required: ['status', 'dryRun', 'error', 'steps', 'logs', 'batch', 'simulated', 'readSimulated'],
  properties: {
    status: {
      enum: ['succeeded', 'failed', 'handled', 'filtered', 'skipped', 'cancelled', 'waiting'],
      description: 'waiting: a node failed in a way a run would retry, or asked to be tried later.',
    },
    dryRun: { type: 'boolean' },
    error: { type: ['object', 'null'] },
    steps: {
      type: 'array',
      items: stepSchema,
      description: 'Every node (and sub-step) that ran, with its output or error; secrets redacted.',
    },
    logs: { type: 'array', description: 'What the operations logged.' },
    batch: {
      type: ['object', 'null'],
      description: "A fan-out node's items: the first 20 and the count. The nodes after it ran with the first.",
    },
    simulated: {
      type: 'array',
      items: { type: 'string' },
      description:
        'Step keys of the nodes the dry run did not perform (they change an outside system): their outputs are ' +
        'placeholders, {"dryRun": true, "wouldSend": ...}. Every other node ran for real, read-only calls (HTTP ' +
        'GET, HEAD) included.',
    },
    readSimulated: {
      type: 'array',
      items: { type: 'string' },
      description: "Nodes that ran on a placeholder: they read a simulated node's output (or such a node's).",
    },
  },
} as const;

const fixtureResultSchema = {
  type: 'object',
  required: ['passed', 'status', 'differences', 'steps'],
  properties: {
    passed: { type: 'boolean', description: 'Every step as recorded, every recorded request sent and no other.' },
    status: testResultSchema.properties.status,
    differences: {
      type: 'array',
      items: {
        type: 'object',
        required: ['step', 'message'],
        properties: {
          step: { type: ['string', 'null'], description: 'The step (null: the run as a whole).' },
          message: { type: 'string' },
          diff: {
            type: 'array',
            items: { type: 'string' },
            description: 'One line per field of an output that differs: `~` changed, `+` added, `-` removed.',
          },
        },
      },
    },
    steps: { type: 'array', items: stepSchema, description: 'Every step of the run now.' },
  },
} as const;

/**
 * Test runs (tag Test): a draft run once, synchronously, recording nothing; tests recorded from runs, and run again
 * against their recording.
 */
export function testRunRoutes({ testRuns, fixtures }: ApiContext) {
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/runs/{id}/fixture',
      tag: 'Test',
      scope: 'runs:read',
      summary: 'Record a test from a run that has ended',
      description:
        "The run's message, every request its nodes sent with its answer (as its steps keep them: credentials and " +
        'secrets masked, bodies kept up to 64 KiB each), and each step as it ended. Nothing is stored: the answer is ' +
        'the test, to keep beside the flow (`tributary test capture`) and run with `POST /api/v1/fixtures/run`.',
      params: idParams,
      responses: {
        200: { description: 'The test.', schema: fixtureSchema },
        409: { description: 'The run has not ended.' },
      },
      handle: async ({ tenantId, params }) => ({ body: await fixtures.capture(tenantId, params.id) }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/fixtures/run',
      tag: 'Test',
      scope: 'flows:write',
      summary: "Run a recorded test against the flow's draft, or a document given, offline",
      description:
        'The message runs through the flow; each request a node sends is answered from the recording by method, URL ' +
        'and body (what was masked in the recording matches anything), and one it does not have fails its node, ' +
        'named. Nothing is sent and nothing is stored. The answer compares each step with the recording (fields the ' +
        'test marks volatile are not compared).',
      keepsLargeIntegers: true,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['fixture'],
        properties: {
          fixture: fixtureSchema,
          document: { type: 'object', description: "A flow document to test instead of the flow's draft." },
        },
      },
      responses: { 200: { description: 'Whether the run is as recorded, and how not.', schema: fixtureResultSchema } },
      handle: async ({ tenantId, body }) => ({
        body: await fromRequest('$.body', () => fixtures.run(tenantId, body.fixture as Fixture, body.document)),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/editable-flows/{id}/test',
      tag: 'Test',
      scope: 'flows:write',
      summary:
        "Run the draft (or the document in the body, or one node of it) with sample input, and get every node's " +
        'output or error',
      description:
        'Nothing is recorded: no message, no run, no statistics; the incremental field does not move and no order is ' +
        'marked. With dryRun (the default), side-effecting operations return what they would send (method, URL, ' +
        'headers with credentials masked, body) instead of sending it; calls that change nothing (an HTTP GET or HEAD) ' +
        'run for real. The answer lists the nodes simulated and those that ran on their placeholders. The answer comes ' +
        'when the run ends: node ' +
        'timeouts bound it.',
      params: idParams,
      // Its input is a webhook body: integers beyond 2^53 - 1 are kept as a flow URL keeps them.
      keepsLargeIntegers: true,
      body: {
        type: 'object',
        additionalProperties: false,
        properties: {
          document: { type: 'object', description: 'A flow document to test instead of the saved draft.' },
          input: {
            type: 'object',
            additionalProperties: false,
            description: 'The trigger message ($input).',
            properties: {
              body: {},
              headers: { type: 'object', additionalProperties: { type: 'string' } },
              query: { type: 'object' },
            },
          },
          dryRun: { type: 'boolean', default: true },
          node: { type: 'string', description: 'Run only this node.' },
          steps: { type: 'object', description: 'With `node`: the outputs of the nodes before it ($steps).' },
        },
        examples: [{ input: { body: { id: 1001, total: 25 } }, dryRun: true }],
      },
      responses: { 200: { description: 'What every node did.', schema: testResultSchema } },
      async handle({ tenantId, params, body }) {
        // A document given is the body's; the stored draft's errors are named from `$.draft`.
        const test = { ...body, input: body.input ?? {} };
        return {
          body: await fromRequest(body.document ? '$.body' : '$', () => testRuns.run(tenantId, params.id, test)),
        };
      },
    }),
  ];
}
