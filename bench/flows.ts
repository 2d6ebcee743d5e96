import type { FlowDocument } from '../engine/flow/schema.ts';

export const MAP_EXPRESSION = "{'id': $input.body.id, 'total': $input.body.total, 'lines': $count($input.body.lines)}";
export const FILTER_EXPRESSION = '$input.body.total > 0';

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
