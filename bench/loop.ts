/**
 * (h) loops: items per second through one run's 1,000-item loop (each item one http.request), beside
 * the same 1,000 calls made by 1,000 webhooks through a one-node flow, on PostgreSQL with a worker
 * process of its own.
 */
import http from 'node:http';
import { sendWebhook, spawnWorker, startTestPlatform } from '../test/support/harness.ts';

const ITEMS = Number(process.env.BENCH_LOOP_ITEMS ?? 1000);
const CONNECTIONS = 50;

const send = (url: string) => ({
  id: 'send',
  operation: 'http.request',
  config: { method: 'POST', url: '{{ $vars.RECEIVER }}/items', body: url },
});

export async function measureLoop(results: Record<string, unknown>) {
  let count = 0;
  let waiter: { target: number; resolve: () => void } | undefined;
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      if (++count >= (waiter?.target ?? Infinity)) waiter!.resolve();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
  const received = (target: number) =>
    new Promise<void>((resolve) => (count >= target ? resolve() : (waiter = { target, resolve })));

  const env = await startTestPlatform('postgres', { api: true, worker: false });
  const worker = spawnWorker(env.config);
  try {
    const tenant = await env.tenant('loops');
    await tenant.call('PUT', '/api/v1/global-variables/RECEIVER', { value: receiverUrl });
    await tenant.publish({
      key: 'loop',
      name: 'loop',
      trigger: { type: 'webhook' },
      nodes: [
        {
          id: 'each',
          operation: 'loop',
          config: { items: '{{ $input.body.items }}', concurrency: 20 },
          nodes: [send('{{ $item }}')],
        },
      ],
      edges: [{ from: 'trigger', to: 'each' }],
    });
    await tenant.publish({
      key: 'one',
      name: 'one',
      trigger: { type: 'webhook' },
      nodes: [send('{{ $input.body }}')],
      edges: [{ from: 'trigger', to: 'send' }],
    });
    await worker.ready;
    const items = Array.from({ length: ITEMS }, (_, n) => ({ n, sku: `SKU-${n}` }));

    const loopStart = performance.now();
    await sendWebhook(env.url, 'loops', 'loop', { items });
    await received(ITEMS);
    const loopSeconds = (performance.now() - loopStart) / 1000;

    count = 0;
    const webhooksStart = performance.now();
    let next = 0;
    const post = async () => {
      while (next < ITEMS) await sendWebhook(env.url, 'loops', 'one', items[next++]);
    };
    await Promise.all(Array.from({ length: CONNECTIONS }, post));
    await received(ITEMS);
    const webhookSeconds = (performance.now() - webhooksStart) / 1000;

    results.loop = {
      items: ITEMS,
      loopItemsPerSecond: Math.round(ITEMS / loopSeconds),
      loopConcurrency: 20,
      webhookRunsPerSecond: Math.round(ITEMS / webhookSeconds),
      ratio: +(webhookSeconds / loopSeconds).toFixed(2),
    };
  } finally {
    worker.child.kill('SIGTERM');
    await new Promise((resolve) => worker.child.once('exit', resolve));
    await env.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
}
