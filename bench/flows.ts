import type { FlowDocument } from '../engine/model/flow-document.ts';

export const MAP_EXPRESSION = "{'id': $input.body.id, 'total': $input.body.total, 'lines': $count($input.body.lines)}";
export const FILTER_EXPRESSION = '$input.body.total > 0';

/** The engine bench's tenants: `bench`, then `bench-1`, `bench-2` ... (the cluster part spreads them over groups). */
export const benchTenants = (count: number) =>
  Array.from({ length: count }, (_, i) => (i === 0 ? 'bench' : `bench-${i}`));

/** transform -> filter -> http.request, the flow the engine benchmark runs. */
export const BENCH_FLOW: FlowDocument = {
  key: 'bench',
  name: 'bench',
  trigger: { type: 'webhook', config: {} },
  nodes: [
    { id: 'map', operation: 'transform', config: { expression: `{{ ${MAP_EXPRESSION} }}` } },
    { id: 'gate', operation: 'filter', config: { condition: `{{ ${FILTER_EXPRESSION} }}` } },
    {
      id: 'send',
      operation: 'http.request',
      config: { method: 'POST', url: '{{ $vars.RECEIVER }}/orders', body: '{{ $steps.map }}' },
    },
  ],
  edges: [
    { from: 'trigger', to: 'map' },
    { from: 'map', to: 'gate' },
    { from: 'gate', to: 'send' },
  ],
};

export const BASELINE = { queue: 'baseline' };

export const sampleOrder = (id: number) => ({
  id,
  total: 25.5,
  currency: 'EUR',
  lines: [
    { sku: 'A-1', quantity: 2 },
    { sku: 'B-7', quantity: 1 },
  ],
});

/**
 * The noisy neighbour's flow: a legal expression that takes a sandbox process about a quarter of a
 * second (a lambda over a long range), then a call.
 */
export const FLOOD_FLOW: FlowDocument = {
  key: 'heavy',
  name: 'heavy',
  trigger: { type: 'webhook', config: {} },
  nodes: [
    {
      id: 'work',
      operation: 'transform',
      config: { expression: '{{ $count($map([1..120000], function($v) { $v * 2 })) }}' },
    },
    { id: 'send', operation: 'http.request', config: { method: 'POST', url: '{{ $vars.RECEIVER }}/flood' } },
  ],
  edges: [
    { from: 'trigger', to: 'work' },
    { from: 'work', to: 'send' },
  ],
};

/** The slow neighbour's flow: one call to a system that answers after BENCH_SLOW_MS (30 s), within every limit. */
export const SLOW_FLOW: FlowDocument = {
  key: 'slow',
  name: 'slow',
  trigger: { type: 'webhook', config: {} },
  nodes: [
    {
      id: 'send',
      operation: 'http.request',
      config: { method: 'POST', url: '{{ $vars.RECEIVER }}/slow' },
      timeoutMs: 120_000,
    },
  ],
  edges: [{ from: 'trigger', to: 'send' }],
};

/** The other tenant's flow: one call, carrying when its webhook was sent. */
export const LIGHT_FLOW: FlowDocument = {
  key: 'light',
  name: 'light',
  trigger: { type: 'webhook', config: {} },
  nodes: [
    {
      id: 'send',
      operation: 'http.request',
      config: { method: 'POST', url: '{{ $vars.RECEIVER }}/light', body: { sentAt: '{{ $input.body.sentAt }}' } },
    },
  ],
  edges: [{ from: 'trigger', to: 'send' }],
};

/**
 * The big-bodies neighbour's flow: a filter over every item of a body of about 1 MB (an expression
 * whose cost grows with its input, not its shape), then a call.
 */
export const BIG_BODY_FLOW: FlowDocument = {
  key: 'big',
  name: 'big',
  trigger: { type: 'webhook', config: {} },
  nodes: [
    { id: 'gate', operation: 'filter', config: { condition: '{{ $count($input.body.items[price > 10]) > 0 }}' } },
    { id: 'send', operation: 'http.request', config: { method: 'POST', url: '{{ $vars.RECEIVER }}/flood' } },
  ],
  edges: [
    { from: 'trigger', to: 'gate' },
    { from: 'gate', to: 'send' },
  ],
};

/** A body of about 1 MB: 9,000 order lines. */
export const bigBody = () =>
  JSON.stringify({
    items: Array.from({ length: 9000 }, (_, i) => ({
      sku: `SKU-${i}`,
      price: i % 50,
      quantity: 1 + (i % 3),
      note: 'x'.repeat(60),
    })),
  });
