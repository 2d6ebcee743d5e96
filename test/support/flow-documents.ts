import type { FlowDocument } from '../../engine/model/flow-document.ts';

/** Flow documents several suites and the drills publish. */

/** A webhook and one transform node: the smallest flow a store keeps. */
export const oneTransform = (key: string): FlowDocument => ({
  key,
  name: key,
  trigger: { type: 'webhook', config: {} },
  nodes: [{ id: 'a', operation: 'transform', config: { expression: 1 } }],
  edges: [{ from: 'trigger', to: 'a' }],
});

/**
 * A webhook whose body is posted, as it came, to `url` (an ERP stand-in): one side effect per message. `node` adds
 * to the node: more `config` (auth, a budget), `retry`.
 */
export const forwardWebhook = (key: string, url: string, node: { config?: object; retry?: object } = {}) => ({
  key,
  name: key,
  trigger: { type: 'webhook' },
  nodes: [
    {
      id: 'send',
      operation: 'http.request',
      config: { method: 'POST', url, body: '{{ $input.body }}', ...node.config },
      ...(node.retry ? { retry: node.retry } : {}),
    },
  ],
  edges: [{ from: 'trigger', to: 'send' }],
});

/** A webhook, then `nodes` one after another. */
export const webhookChain = <Node extends { id: string }>(key: string, nodes: Node[]) => ({
  key,
  name: key,
  trigger: { type: 'webhook' },
  nodes,
  edges: nodes.map((node, index) => ({ from: index === 0 ? 'trigger' : nodes[index - 1].id, to: node.id })),
});

/** A schedule that posts to `url` every second. */
export const pollEverySecond = (key: string, url: string) => ({
  key,
  name: key,
  trigger: { type: 'schedule', config: { every: '1s' } },
  nodes: [{ id: 'tick', operation: 'http.request', config: { method: 'POST', url } }],
  edges: [{ from: 'trigger', to: 'tick' }],
});

/**
 * A webhook whose body's `lines` are each posted to `$vars.ERP_URL/lines` by a loop (its `config` besides the
 * items: `concurrency`, `onItemFailure`), each tried once; then `after`, the nodes that follow the loop, one after
 * another.
 */
export const eachLine = (key: string, config: object, after: object[] = []) => ({
  key,
  name: key,
  trigger: { type: 'webhook', config: {} },
  nodes: [
    {
      id: 'each',
      operation: 'loop',
      config: { items: '{{ $input.body.lines }}', ...config },
      nodes: [
        {
          id: 'send',
          operation: 'http.request',
          config: { method: 'POST', url: '{{ $vars.ERP_URL }}/lines', body: '{{ $item }}' },
          retry: { maxAttempts: 1 },
        },
      ],
    },
    ...after,
  ],
  edges: ['trigger', 'each', ...after.map((node) => (node as { id: string }).id)]
    .slice(1)
    .map((to, index, ids) => ({ from: index === 0 ? 'trigger' : ids[index - 1], to })),
});
