import { ExpressionSandbox } from '../engine/expressions/sandbox.ts';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type CompiledFlow,
  compileFlow,
  pinOperationVersions,
  validateFlow,
  type CompileOptions,
} from '../engine/flow/compile.ts';
import type { OperationSpec } from '../engine/nodes/operation.ts';
import { TemplateCompiler } from '../engine/expressions/template.ts';
import { JSONATA_FUNCTIONS } from '../engine/expressions/expression-reads.ts';
import jsonata from 'jsonata';
import { Expression } from '../engine/expressions/expression.ts';
import { JsonText, parseOnRead, unreadText } from '../engine/model/json-text.ts';
import { defineOperation, OperationRegistry } from '../engine/plugins/operations.ts';
import { flowDocumentSchema, type FlowDocument } from '../engine/model/flow-document.ts';
import { allOperations, webhookSignatures } from '../operations/index.ts';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const sandbox = new ExpressionSandbox({
  timeoutMs: 200,
  memoryMb: 64,
  maxDepth: 100,
  maxResultBytes: 1 << 20,
  processes: 1,
});
const options: CompileOptions = {
  registry: new OperationRegistry(allOperations, webhookSignatures),
  sandbox,
  defaultTimeoutMs: 30_000,
};
afterAll(() => sandbox.close());
const flow = (nodes: object[], edges: object[], extra: object = {}) => ({
  key: 'k',
  name: 'n',
  trigger: { type: 'webhook' },
  nodes,
  edges,
  ...extra,
});
const map = { id: 'map', operation: 'transform', config: { expression: '{{ $input.body }}' } };

describe('flow validation', () => {
  it('accepts every example flow in flows/', () => {
    const dir = path.resolve(import.meta.dirname, '../flows');
    const files = readdirSync(dir).filter((file) => file.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(3);
    for (const file of files)
      expect(validateFlow(JSON.parse(readFileSync(path.join(dir, file), 'utf8')), options), file).toEqual([]);
  });

  it('compiles a loop: its body is a graph entered from "item", its node ids unique across the flow', async () => {
    const send = {
      id: 'send',
      operation: 'http.request',
      config: { method: 'POST', url: 'https://x.example/{{ $index }}' },
    };
    const loop = (extra: object) => ({
      id: 'each',
      operation: 'loop',
      config: { items: '{{ $input.body.items }}' },
      nodes: [map, send],
      ...extra,
    });
    const compiled = compileFlow(flow([loop({})], [{ from: 'trigger', to: 'each' }]), options);
    const spec = compiled.graph.nodes[0].spec as {
      concurrency: number;
      onItemFailure: string;
      body: { entry: string; nodes: { id: string }[] };
    };
    expect(spec).toMatchObject({ concurrency: 4, onItemFailure: 'stop', body: { entry: 'item' } });
    // Without edges, the body's nodes run in the order written.
    expect(spec.body.nodes.map((node) => node.id)).toEqual(['map', 'send']);

    const problems = (document: object) =>
      validateFlow(document, options).map(({ path, message }) => `${path} ${message}`);
    expect(problems(flow([loop({ nodes: undefined })], [{ from: 'trigger', to: 'each' }]))).toEqual([
      '$.nodes[0] a loop needs nodes: its body, run once per item',
    ]);
    expect(
      problems(
        flow(
          [
            map,
            loop({
              config: { items: '$input.body.items', concurrency: 50 },
              nodes: [{ ...map }, { id: 'inner', operation: 'loop', config: { items: '{{ $item }}' }, nodes: [send] }],
              edges: [
                { from: 'item', to: 'map' },
                { from: 'map', to: 'nowhere' },
              ],
            }),
          ],
          [
            { from: 'trigger', to: 'map' },
            { from: 'map', to: 'each' },
          ],
        ),
      ),
    ).toEqual(['$.nodes[1].config.concurrency must be <= 20']);
    // A loop after map, its body: map again (a duplicate id), a nested loop, and a third node.
    const badLoop = (third: object, edges?: object[], after: object[] = []) =>
      flow(
        [
          map,
          loop({
            config: { items: '$input.body.items' },
            nodes: [
              { ...map },
              { id: 'inner', operation: 'loop', config: { items: '{{ $item }}' }, nodes: [{ ...send, id: 's2' }] },
              third,
            ],
            edges,
          }),
          ...after,
        ],
        [
          { from: 'trigger', to: 'map' },
          { from: 'map', to: 'each' },
          ...after.map(() => ({ from: 'each', to: 'send' })),
        ],
      );
    expect(problems(badLoop({ id: 7 }))).toEqual([
      "$.nodes[1].nodes[2].operation must have required property 'operation'",
      '$.nodes[1].nodes[2].id must be string',
      '$.nodes[1].config.items must be a single {{ expression }}',
    ]);
    expect(
      problems(
        badLoop(
          { id: 'import', operation: 'shopify.orders-import-list', config: {} },
          [
            { from: 'item', to: 'map' },
            { from: 'map', to: 'nowhere' },
            { from: 'item', to: 'inner' },
          ],
          [{ ...send, nodes: [map] }],
        ),
      ),
    ).toEqual([
      '$.nodes[1].nodes[0].id duplicates the id of $.nodes[0]',
      '$.nodes[1].edges[1].to names no node here: nowhere',
      "$.nodes[1].nodes[2].config.destination must have required property 'destination'",
      '$.nodes[1].nodes[1].operation a loop cannot be inside a loop',
      '$.nodes[1].nodes[2].operation a fan-out operation runs only at the top of a flow, not in a loop',
      '$.nodes[1].nodes[2] is not reachable from the item',
      '$.nodes[1].config.items must be a single {{ expression }}',
      '$.nodes[2].nodes only a loop has a body of nodes and edges',
    ]);
  });

  it('checks a wait: one of for and until, a duration or a time it understands, within the limit', () => {
    const wait = (config: object) =>
      flow([{ id: 'pause', operation: 'wait', config }], [{ from: 'trigger', to: 'pause' }]);
    const problems = (config: object) =>
      validateFlow(wait(config), options).map(({ path, message }) => `${path} ${message}`);
    expect(problems({ for: '90s' })).toEqual([]);
    expect(problems({ until: '{{ $input.body.at }}' })).toEqual([]);
    expect(problems({})).toEqual(['$.nodes[0].config must NOT have fewer than 1 properties']);
    expect(problems({ for: '5s', until: '2026-01-01T00:00:00Z' })).toEqual([
      '$.nodes[0].config must NOT have more than 1 properties',
    ]);
    expect(problems({ for: '5 minutes' })).toEqual([
      '$.nodes[0].config for must be a duration such as "90s", "15m", "2h" or "3d": it is "5 minutes"',
    ]);
    expect(problems({ for: '31d' })).toEqual(['$.nodes[0].config waits more than the limit of 30 days']);
    expect(problems({ until: '2026-12-01 09:00' })).toEqual([
      '$.nodes[0].config until must be an ISO 8601 time with its offset, such as "2026-12-01T09:00:00Z": it is "2026-12-01 09:00"',
    ]);
  });

  it('refuses a $steps of a node that has not run, and a function JSONata does not have, suggesting the name meant', () => {
    const problems = (document: object) =>
      validateFlow(document, options).map(({ path, message, node }) => `${path} (${node}) ${message}`);
    const transform = (id: string, expression: string) => ({ id, operation: 'transform', config: { expression } });
    const chain = (...ids: string[]) =>
      ids.map((id, index) => ({ from: index === 0 ? 'trigger' : ids[index - 1], to: id }));
    expect(
      problems(
        flow(
          [
            transform('map', '{{ $steps.later }}'),
            transform('aa_b', '{{ $steps.map.id }}'),
            transform('later', '{{ $steps.aa_c }}'),
          ],
          chain('map', 'aa_b', 'later'),
        ),
      ),
    ).toEqual([
      '$.nodes[0].config.expression (map) reads $steps.later, but node later does not run before it',
      '$.nodes[2].config.expression (later) reads $steps.aa_c, but the flow has no node aa_c: did you mean $steps.aa_b?',
    ]);
    // An edge's condition is evaluated once the node it leaves has run: it may read that node.
    expect(
      problems(
        flow(
          [transform('a', '{{ 1 }}'), transform('b', '{{ 2 }}')],
          [
            { from: 'trigger', to: 'a' },
            { from: 'a', to: 'b', when: '{{ $steps.a = 1 and $steps.b = 2 }}' },
          ],
        ),
      ),
    ).toEqual(['$.edges[1].when (undefined) reads $steps.b, but node b does not run before it']);
    // In a loop's body: the nodes before the loop and the item's own, not the loop itself.
    const loop = {
      id: 'each',
      operation: 'loop',
      config: { items: '{{ $steps.map }}' },
      nodes: [
        transform('first', '{{ $steps.map.id & $item }}'),
        transform('second', '{{ [$steps.first, $steps.each] }}'),
      ],
    };
    expect(problems(flow([transform('map', '{{ [1] }}'), loop], chain('map', 'each')))).toEqual([
      '$.nodes[1].nodes[1].config.expression (second) reads $steps.each, but node each does not run before it',
    ]);
    expect(
      problems(flow([transform('map', '{{ $uppercse($input.body.name) & $trim($input.body.name) }}')], chain('map'))),
    ).toEqual([
      '$.nodes[0].config.expression (map) calls $uppercse, which JSONata does not have: did you mean $uppercase?',
    ]);
    // A function the expression defines is no mistake.
    expect(
      problems(flow([transform('map', '{{ ($twice := function($x) { $x * 2 }; $twice(2)) }}')], chain('map'))),
    ).toEqual([]);
  });

  it('takes an error path only from a node: the trigger cannot fail', () => {
    const send = { id: 'send', operation: 'transform', config: { expression: '{{ $failure.message }}' } };
    expect(
      validateFlow(flow([send], [{ from: 'trigger', to: 'send', on: 'error' }]), options).map(
        ({ path, message }) => `${path} ${message}`,
      ),
    ).toEqual(['$.edges[0].on the trigger does not fail: an error path leaves a node']);
  });

  it('knows every JSONata function', async () => {
    for (const name of JSONATA_FUNCTIONS) expect(await jsonata(`$type($${name})`).evaluate({}), name).toBe('function');
  });

  it('accepts the example the API reference shows', () => {
    expect(flowDocumentSchema.examples).toHaveLength(1);
    expect(validateFlow(structuredClone(flowDocumentSchema.examples[0]), options)).toEqual([]);
  });

  it('reports schema errors with their JSON paths', () => {
    const errors = validateFlow(
      { key: 'Bad Key', name: 'n', trigger: { type: 'webhook' }, nodes: [{ id: 'a' }], edges: [], extra: 1 },
      options,
    );
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: '$.key' }),
        expect.objectContaining({ path: '$.nodes[0].operation', message: expect.stringContaining('required') }),
        expect.objectContaining({ path: '$.extra' }),
      ]),
    );
  });

  it('names the node and field of duplicate ids, unknown operations and bad config', () => {
    const errors = validateFlow(
      flow(
        [
          map,
          { id: 'map', operation: 'transform', config: { expression: 1 } },
          { id: 'x', operation: 'no.such.op' },
          { id: 'send', operation: 'http.request', config: { url: 'ftp://nope', method: 'BREW' } },
        ],
        [
          { from: 'trigger', to: 'map' },
          { from: 'map', to: 'x' },
          { from: 'map', to: 'send' },
        ],
      ),
      options,
    );
    expect(errors).toEqual(
      expect.arrayContaining([
        { path: '$.nodes[1].id', message: expect.stringContaining('duplicates'), node: 'map' },
        { path: '$.nodes[2].operation', message: expect.stringContaining('no.such.op'), node: 'x' },
        expect.objectContaining({ path: '$.nodes[3].config.url', node: 'send' }),
        expect.objectContaining({ path: '$.nodes[3].config.method', node: 'send' }),
      ]),
    );
  });

  it('refuses framing and hop-by-hop headers a tenant sets on http.request, in any case', () => {
    const headers = { 'Transfer-Encoding': 'chunked', HOST: 'inside', 'Proxy-Authorization': 'x', 'X-Ok': '1' };
    const errors = validateFlow(
      flow(
        [{ id: 'send', operation: 'http.request', config: { url: 'https://example.com', headers } }],
        [{ from: 'trigger', to: 'send' }],
      ),
      options,
    );
    expect(errors).toEqual(
      ['["Transfer-Encoding"]', '.HOST', '["Proxy-Authorization"]'].map((name) => ({
        path: `$.nodes[0].config.headers${name}`,
        message: 'is a name not allowed here',
        node: 'send',
      })),
    );
  });

  it('defers checks of config values given as expressions to run time', () => {
    const send = {
      id: 'send',
      operation: 'http.request',
      config: { url: '{{ $vars.URL }}', method: '{{ "POST" }}', timeoutMs: '{{ 5 * 1000 }}' },
    };
    expect(validateFlow(flow([send], [{ from: 'trigger', to: 'send' }]), options)).toEqual([]);
  });

  it('reports expressions that do not compile, with node and field', () => {
    const errors = validateFlow(
      flow(
        [{ id: 'map', operation: 'transform', config: { expression: '{{ $input.( }}' } }],
        [{ from: 'trigger', to: 'map', when: '{{ $input.body.ok = }}' }],
      ),
      options,
    );
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          path: '$.nodes[0].config.expression',
          node: 'map',
          message: expect.stringContaining('does not compile'),
        }),
        expect.objectContaining({ path: '$.edges[0].when', message: expect.stringContaining('does not compile') }),
      ]),
    );
  });

  it('reports edges to unknown nodes, cycles and unreachable nodes', () => {
    const errors = validateFlow(
      flow(
        [
          map,
          { id: 'a', operation: 'transform', config: { expression: 1 } },
          { id: 'b', operation: 'transform', config: { expression: 2 } },
          { id: 'lonely', operation: 'transform', config: { expression: 3 } },
        ],
        [
          { from: 'trigger', to: 'map' },
          { from: 'map', to: 'a' },
          { from: 'a', to: 'b' },
          { from: 'b', to: 'a' },
          { from: 'ghost', to: 'map' },
        ],
      ),
      options,
    );
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: '$.edges[4].from', message: expect.stringContaining('ghost') }),
        expect.objectContaining({ path: '$.nodes[1]', node: 'a', message: 'is part of a cycle' }),
        expect.objectContaining({ path: '$.nodes[2]', node: 'b', message: 'is part of a cycle' }),
        expect.objectContaining({ path: '$.nodes[3]', node: 'lonely', message: 'is not reachable from the trigger' }),
      ]),
    );
  });

  it('orders nodes so each runs after everything it depends on', () => {
    const compiled = compileFlow(
      flow(
        [
          { id: 'last', operation: 'transform', config: { expression: 1 } },
          { id: 'first', operation: 'transform', config: { expression: 1 } },
          { id: 'middle', operation: 'transform', config: { expression: 1 } },
        ],
        [
          { from: 'middle', to: 'last' },
          { from: 'trigger', to: 'first' },
          { from: 'first', to: 'middle' },
          { from: 'first', to: 'last' },
        ],
      ),
      options,
    );
    expect(compiled.graph.nodes.map((node) => node.id)).toEqual(['first', 'middle', 'last']);
  });

  it('refuses to keep a header whose name reads like a credential', () => {
    const document = {
      ...flow(
        [{ id: 'keep', operation: 'transform', config: { expression: '{{ 1 }}' } }],
        [{ from: 'trigger', to: 'keep' }],
      ),
      trigger: { type: 'webhook', config: { keepHeaders: ['X-Shop', 'X-Api-Key', 'X-Auth'] } },
    };
    expect(validateFlow(document, options).map((error) => error.path)).toEqual([
      '$.trigger.config.keepHeaders[1]',
      '$.trigger.config.keepHeaders[2]',
    ]);
  });

  it('records which variables and secrets a flow reads', () => {
    const compiled = compileFlow(
      flow(
        [
          {
            id: 'send',
            operation: 'http.request',
            config: { url: '{{ $vars.ERP_URL }}/x', auth: { type: 'bearer', token: '{{ $secrets.ERP_TOKEN }}' } },
          },
        ],
        [{ from: 'trigger', to: 'send' }],
      ),
      options,
    );
    expect(compiled.references.vars).toEqual(new Set(['ERP_URL']));
    expect(compiled.references.secrets).toEqual(new Set(['ERP_TOKEN']));
  });

  it('refuses variables and secrets read other than by name: a run would have to load them all', () => {
    const reading = (expression: string) =>
      flow([{ id: 'read', operation: 'transform', config: { expression } }], [{ from: 'trigger', to: 'read' }]);
    for (const expression of ['{{ $lookup($vars, $input.body.name) }}', '{{ $keys($secrets) }}', '{{ $vars }}'])
      expect(validateFlow(reading(expression), options)).toEqual([
        expect.objectContaining({ path: '$.nodes[0].config.expression', message: expect.stringContaining('by name') }),
      ]);
    // A variable of the expression's own whose name starts the same is not a read of $vars.
    expect(validateFlow(reading('{{ ($varsLength := 2; $vars.LIMIT * $varsLength) }}'), options)).toEqual([]);
    expect(compileFlow(reading('{{ $keys($platform) }}'), options).references.platform).toBe('*');
  });

  it('runs the major a node pins, the newest otherwise, and publishing pins the newest', async () => {
    const echo = (version: string) =>
      defineOperation({
        name: 'test.echo',
        title: `Echo v${version}`,
        description: 'Returns its major.',
        version,
        sideEffects: false,
        configSchema: { type: 'object', properties: {} },
        run: async () => version,
      });
    const registry = new OperationRegistry([echo('1.4.0'), echo('2.0.0')]);
    const versioned = { ...options, registry };
    const document = flow([{ id: 'e', operation: 'test.echo' }], [{ from: 'trigger', to: 'e' }]) as FlowDocument;
    const versionOf = (compiled: CompiledFlow) =>
      (compiled.graph.nodes[0].spec as OperationSpec).operation.definition.version;
    expect(versionOf(compileFlow(document, versioned))).toBe('2.0.0');
    const pinned = pinOperationVersions(document, new OperationRegistry([echo('1.4.0')]));
    expect(pinned.nodes[0].operationVersion).toBe(1);
    // Registering a breaking major later leaves the published version on the one it was published with.
    expect(versionOf(compileFlow(pinned, versioned))).toBe('1.4.0');
    expect(pinOperationVersions(pinned, registry)).toEqual(pinned);
    expect(
      validateFlow({ ...document, nodes: [{ id: 'e', operation: 'test.echo', operationVersion: 3 }] }, versioned),
    ).toEqual([
      { path: '$.nodes[0].operationVersion', message: 'test.echo has no major version 3 (it has 1, 2)', node: 'e' },
    ]);
    expect(() => new OperationRegistry([echo('2.1.0'), echo('2.0.0')])).toThrow('test.echo v2 is registered twice');
  });

  it('checks a delivery as the signature its family declares; a second vendor needs no engine change', () => {
    const hooked = (verify: object) =>
      flow([map], [{ from: 'trigger', to: 'map' }], { trigger: { type: 'webhook', config: { verify } } });
    const acmeSigned = {
      type: 'acme-signed',
      description: 'Acme: HMAC-SHA256, hex, in X-Acme-Signature.',
      header: 'X-Acme-Signature',
      encoding: 'hex' as const,
      deliveryIdHeader: 'X-Acme-Delivery',
    };
    const registry = new OperationRegistry(allOperations, [...webhookSignatures, acmeSigned]);
    const compiled = compileFlow(hooked({ type: 'acme-signed', secret: 'ACME_KEY', previousSecret: 'OLD_KEY' }), {
      ...options,
      registry,
    });
    expect(compiled.trigger).toMatchObject({
      type: 'webhook',
      webhook: {
        verification: {
          kind: 'hmac-sha256',
          header: 'x-acme-signature',
          encoding: 'hex',
          prefix: '',
          secrets: ['ACME_KEY', 'OLD_KEY'],
        },
        deliveryIdHeader: 'x-acme-delivery',
      },
    });
    expect(validateFlow(hooked({ type: 'shopify', secret: 'S', topic: 'refunds/create' }), options)).toEqual([]);
    expect(validateFlow(hooked({ type: 'acme-signed', secret: 'S' }), options)).toEqual([
      { path: '$.trigger.config.verify.type', message: 'names no webhook signature: acme-signed' },
    ]);
    expect(validateFlow(hooked({ type: 'acme-signed', secret: 'S', topic: 'a/b' }), { ...options, registry })).toEqual([
      { path: '$.trigger.config.verify.topic', message: 'acme-signed deliveries name no topic' },
    ]);
    expect(registry.topicHeaders()).toEqual(['x-shopify-topic', 'x-topic', 'x-event-type']);
  });
});

describe('templates', () => {
  const compile = (value: unknown) => {
    const compiler = new TemplateCompiler(sandbox);
    const template = compiler.compile(value, '$');
    expect(compiler.errors).toEqual([]);
    return template;
  };
  const bindings = {
    input: { body: { id: 7, items: [1, 2, 3] } },
    steps: {},
    vars: { HOST: 'erp.example' },
    secrets: {},
  };

  it('keeps the type of a whole {{ }} and interpolates text', async () => {
    expect(await compile('{{ $input.body.id }}').evaluate(bindings)).toBe(7);
    expect(await compile('{{ $sum($input.body.items) }}').evaluate(bindings)).toBe(6);
    expect(await compile('https://{{ $vars.HOST }}/orders/{{ $input.body.id }}').evaluate(bindings)).toBe(
      'https://erp.example/orders/7',
    );
    expect(await compile({ nested: ['{{ $input.body.id + 1 }}', 'plain'] }).evaluate(bindings)).toEqual({
      nested: [8, 'plain'],
    });
  });

  it('evaluates an object constructor with nested braces', async () => {
    expect(await compile("{{ {'id': $input.body.id, 'inner': {'n': 1}} }}").evaluate(bindings)).toEqual({
      id: 7,
      inner: { n: 1 },
    });
  });

  it('fails a runaway expression with a clear, permanent error instead of stalling', async () => {
    const runaway = compile('{{ ( $f := function($n) { $f($n + 1) }; $f(0) ) }}');
    await expect(runaway.evaluate(bindings)).rejects.toMatchObject({
      kind: 'permanent',
      message: expect.stringContaining('EXPRESSION_TIMEOUT_MS'),
    });
  });
});

describe('where expressions run', () => {
  const isolated = (source: string) => new Expression(source, sandbox).isolated;

  it('evaluates expressions bounded by their input in the process', () => {
    for (const source of [
      "{'id': $input.body.id, 'lines': $count($input.body.lines)}",
      '$input.body.total > 0',
      '$input.body.items[price > 1].sku',
      '$vars.URL & "/orders/" & $string($input.body.id)',
      '$input.body.a[0] ? $uppercase($input.body.b) : -1',
      '$document("rates", $input.body.currency)',
    ]) {
      expect(isolated(source), source).toBe(false);
    }
  });

  it('sends loops, ranges, lambdas, cross products and amplifying functions to the sandbox', () => {
    for (const source of [
      '[1..5]',
      '$distinct($input.body.a)',
      '$pad("x", 9)',
      '$join($input.body.a, $input.body.s)',
      '$map($input.body.a, function($v) { $v })',
      '$input.body.a.($input.body.b)',
      '$input.body.a[$input.body.i]',
      '$input.body.*',
      '**.x',
      '$input.body.s ~> $uppercase',
      '$match($input.body.s, /a+/)',
      'a{b: c}',
      `(${Array.from({ length: 40 }, (_, i) => `$input.body.f${i}`).join(' + ')})`,
    ]) {
      expect(isolated(source), source).toBe(true);
    }
  });
});

describe('where expressions over big inputs run', () => {
  /** What an expression may read in the process (docs/configuration.md). */
  const MAX_INLINE_VALUES = 4000;
  // A closed sandbox refuses every evaluation: what still evaluates was evaluated here.
  const closed = new ExpressionSandbox({ ...sandbox.limits });
  closed.close();
  const filter = new Expression('$count($input.body.items[price > 10])', closed);
  const items = (n: number) => ({ body: { items: Array.from({ length: n }, (_, i) => ({ price: i % 20 })) } });

  it('evaluates an expression bounded by its input here while the input is small', async () => {
    expect(filter.isolated).toBe(false);
    expect(await filter.evaluate({ input: items(100) })).toBe(45);
  });

  it(`sends it to the sandbox once what it reads passes ${MAX_INLINE_VALUES} values, in its input or its steps`, async () => {
    await expect(filter.evaluate({ input: items(MAX_INLINE_VALUES) })).rejects.toThrow('sandbox is closed');
    const fromSteps = new Expression('$count($steps.fetch.items)', closed);
    const small = { input: {}, steps: { fetch: items(10).body } };
    expect(await fromSteps.evaluate(small)).toBe(10);
    const big = { input: {}, steps: { fetch: items(10).body, more: items(MAX_INLINE_VALUES).body } };
    await expect(fromSteps.evaluate(big)).rejects.toThrow('sandbox is closed');
    // The same answer, either way.
    expect(
      await new Expression('$count($input.body.items[price > 10])', sandbox).evaluate({
        input: items(MAX_INLINE_VALUES),
      }),
    ).toBe((MAX_INLINE_VALUES / 20) * 9);
  });

  it('leaves a large body unparsed here: expressions that read it get it in the sandbox, as text', async () => {
    const body = items(3000).body;
    const input = { messageId: 'm', body: null as unknown };
    parseOnRead(input, 'body', new JsonText(JSON.stringify(body)));
    await expect(filter.evaluate({ input })).rejects.toThrow('sandbox is closed');
    await expect(new Expression('$input.body.items[0].price', closed).evaluate({ input })).rejects.toThrow(
      'sandbox is closed',
    );
    expect(await new Expression('$vars.URL', closed).evaluate({ input, vars: { URL: 'u' } })).toBe('u');
    expect(unreadText(input, 'body')).toBeDefined();
    const evaluated = (source: string) => new Expression(source, sandbox).evaluate({ input });
    expect(await evaluated('$count($input.body.items[price > 10])')).toBe(150 * 9);
    expect(await evaluated('[$input.messageId, $input.body.items[1].price]')).toEqual(['m', 1]);
    // Read here (an operation reading its input), the body is parsed once, and is what was sent.
    expect(unreadText(input, 'body')).toBeDefined();
    expect(input.body).toEqual(body);
    expect(unreadText(input, 'body')).toBeUndefined();
    expect(JSON.parse(JSON.stringify(input))).toEqual({ messageId: 'm', body });
  });
});

describe('plain paths', () => {
  // Plain paths skip JSONata; these pin that the answer is JSONata's all the same.
  const bindings = {
    input: {
      body: { id: 7, name: 'x', nothing: null, items: [{ sku: 'a' }, { sku: 'b' }], nested: { deep: { value: 3 } } },
    },
    steps: { map: { id: 7 } },
    vars: { URL: 'http://erp' },
    secrets: {},
  };
  const sources = [
    '$input.body.id',
    '$input.body.name.length',
    '$input.body.nothing',
    '$input.body.nothing.x',
    '$input.body.items',
    '$input.body.items.sku',
    '$input.body.nested.deep.value',
    '$input.body.missing.deep',
    '$steps.map',
    '$vars.URL',
    '$vars.MISSING',
    '$input',
  ];
  for (const source of sources) {
    it(`${source} evaluates as in JSONata`, async () => {
      const compiler = new TemplateCompiler(sandbox);
      const template = compiler.compile(`{{ ${source} }}`, '$');
      const jsonataValue = await (await import('jsonata')).default(source).evaluate(bindings.input, bindings);
      // Compared as JSON, as outputs are stored (JSONata's sequences carry extra own properties).
      expect(JSON.stringify(await template.evaluate(bindings))).toEqual(JSON.stringify(jsonataValue));
    });
  }
});
