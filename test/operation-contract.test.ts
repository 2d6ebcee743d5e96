import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { later, retryable } from '../engine/model/errors.ts';
import { defineOperation } from '../engine/plugins/operations.ts';
import { sendWebhook, startTestPlatform, type ApiClient, type TestPlatform } from './support/harness.ts';
import { Receiver } from './support/receiver.ts';

// Operations written against the plugin contract, to pin what the engine promises every operation.
const calls = new Map<string, number>();
const count = (key: string) => {
  const next = (calls.get(key) ?? 0) + 1;
  calls.set(key, next);
  return next;
};

const notYet = defineOperation({
  name: 'test.not-yet',
  title: 'Not yet, twice',
  description: 'Says "later" on its first two calls for a run, then succeeds.',
  version: '1.0.0',
  sideEffects: false,
  configSchema: { type: 'object', additionalProperties: false, properties: {} },
  run: async (ctx) => {
    if (count(`not-yet:${ctx.runId}`) <= 2) throw later('the order is not synced yet', { retryAfterMs: 20 });
    return { attempt: ctx.attempt };
  },
});

const twoCalls = defineOperation({
  name: 'test.two-calls',
  title: 'Two calls',
  description: 'Posts to /first, then to /second, each a memoized sub-step; the second fails once.',
  version: '1.0.0',
  sideEffects: true,
  configSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['url'],
    properties: { url: { type: 'string' } },
  },
  run: async (ctx) => {
    const post = async (path: string) =>
      (
        await fetch(`${ctx.config.url}${path}`, {
          method: 'POST',
          headers: { 'idempotency-key': `${ctx.idempotencyKey}.${path}` },
        })
      ).status;
    const first = await ctx.step('first', () => post('/first'));
    const second = await ctx.step('second', async () => {
      if (count(`two-calls:${ctx.runId}`) === 1) throw retryable('connection reset');
      return post('/second');
    });
    return { first, second };
  },
});

const stepNamed = defineOperation({
  name: 'test.step-named',
  title: 'Steps by the given names',
  description: 'Runs one memoized sub-step per name in its config, in order.',
  version: '1.0.0',
  sideEffects: false,
  configSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['names'],
    properties: { names: { type: 'array', items: { type: 'string' } } },
  },
  run: async (ctx) => {
    const results: number[] = [];
    for (const name of ctx.config.names)
      results.push(await ctx.step(name, async () => count(`step-named:${ctx.runId}`)));
    return results;
  },
});

let env: TestPlatform;
let acme: ApiClient;
let receiver: Receiver;

beforeAll(async () => {
  env = await startTestPlatform('postgres', { api: true, worker: true }, {}, [notYet, twoCalls, stepNamed]);
  acme = await env.tenant('acme');
  receiver = await new Receiver().start();
});
afterAll(async () => {
  await receiver?.close();
  await env?.close();
});

describe('the operation contract', () => {
  it('"later" waits and tries again without spending an attempt', async () => {
    await acme.publish({
      key: 'later',
      name: 'later',
      trigger: { type: 'webhook' },
      nodes: [{ id: 'wait', operation: 'test.not-yet', retry: { maxAttempts: 1 } }],
      edges: [{ from: 'trigger', to: 'wait' }],
    });
    const run = await acme.settledRun((await sendWebhook(env.url, 'acme', 'later', {})).body.runId);
    expect(run.status).toBe('succeeded');
    expect(calls.get(`not-yet:${run.id}`)).toBe(3);
    expect(run.steps[0]).toMatchObject({ status: 'succeeded', attempts: 1, output: { attempt: 1 } });
  });

  it('ctx.step runs each sub-step once per run, across retries', async () => {
    await acme.publish({
      key: 'steps',
      name: 'steps',
      trigger: { type: 'webhook' },
      nodes: [
        {
          id: 'calls',
          operation: 'test.two-calls',
          config: { url: receiver.url },
          retry: { maxAttempts: 3, backoffMs: 10 },
        },
      ],
      edges: [{ from: 'trigger', to: 'calls' }],
    });
    const run = await acme.settledRun((await sendWebhook(env.url, 'acme', 'steps', {})).body.runId);
    expect(run.status).toBe('succeeded');
    expect(receiver.requests.map((request) => request.url)).toEqual(['/first', '/second']);
    expect(run.steps.map((step: { key: string; status: string }) => [step.key, step.status])).toEqual([
      ['calls/first', 'succeeded'],
      ['calls', 'succeeded'],
      ['calls/second', 'succeeded'],
    ]);
    expect(run.steps.find((step: { key: string }) => step.key === 'calls')).toMatchObject({
      attempts: 2,
      output: { first: 200, second: 200 },
    });
  });

  it('ctx.step refuses a name used twice in one attempt, and names the engine keeps for itself', async () => {
    const named = async (key: string, names: string[]) => {
      await acme.publish({
        key,
        name: key,
        trigger: { type: 'webhook' },
        nodes: [{ id: 'work', operation: 'test.step-named', config: { names } }],
        edges: [{ from: 'trigger', to: 'work' }],
      });
      return acme.settledRun((await sendWebhook(env.url, 'acme', key, {})).body.runId);
    };
    expect(await named('distinct-steps', ['a', 'b'])).toMatchObject({
      status: 'succeeded',
      steps: expect.arrayContaining([expect.objectContaining({ key: 'work', output: [1, 2] })]),
    });
    const twice = await named('same-step', ['a', 'a']);
    expect(twice).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: {
        kind: 'permanent',
        node: 'work',
        message: expect.stringContaining('ctx.step("a") in node work: the name is used twice'),
      },
    });
    expect(await named('reserved-step', ['batch'])).toMatchObject({
      status: 'failed',
      error: { message: expect.stringContaining('"batch" is reserved') },
    });
    expect(await named('empty-step', [''])).toMatchObject({
      status: 'failed',
      error: { message: expect.stringContaining('1-200 characters') },
    });
  });
});
