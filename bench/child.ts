/**
 * The processes the benchmark measures, each in its own OS process so the load generator and the
 * receiver do not share its event loop. Prints `READY <detail>` once it can be measured.
 */
import http from 'node:http';
import express from 'express';
import jsonata from 'jsonata';
import { Worker } from 'bullmq';
import { createClientCredentials } from '../api/auth/clients.ts';
import { loadConfig, workerConcurrency } from '../bin/config/config.ts';
import { Platform } from '../bin/platform.ts';
import { redisOptions } from '../bin/redis.ts';
import { truthy } from '../engine/expressions/expression.ts';
import { newId } from '../engine/model/ids.ts';
import type { FlowDocument } from '../engine/model/flow-document.ts';
import { pino } from 'pino';
import {
  BENCH_FLOW,
  benchTenants,
  BASELINE,
  BIG_BODY_FLOW,
  SLOW_FLOW,
  MAP_EXPRESSION,
  FILTER_EXPRESSION,
  FLOOD_FLOW,
  LIGHT_FLOW,
} from './flows.ts';

const mode = process.argv[2];

/** A flow created and published straight in the store. */
async function publish(platform: Platform, tenant: string, document: FlowDocument) {
  const flow = await platform.store.createFlow(tenant, {
    id: newId(),
    key: document.key,
    name: document.name,
    draft: document,
  });
  await platform.store.publishFlow(tenant, flow.id, flow.revision, document);
}

if (mode === 'bare-express') {
  // The machine's ceiling for a JSON endpoint on Express 5.
  const app = express();
  app.post(
    '/hooks/:tenant/:key',
    express.json({ limit: '1mb' }),
    (req, res) => void res.status(202).json({ messageId: newId(), received: req.body !== undefined }),
  );
  const server = app.listen(0, '127.0.0.1', () =>
    console.log(`READY http://127.0.0.1:${(server.address() as { port: number }).port}`),
  );
} else if (mode === 'bare-node') {
  // The same handler on node:http alone: the ceiling of the flow URL's path, which skips Express.
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.stringify({
        messageId: newId(),
        received: JSON.parse(Buffer.concat(chunks).toString()) !== undefined,
      });
      res
        .writeHead(202, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(body),
        })
        .end(body);
    });
  });
  server.listen(0, '127.0.0.1', () =>
    console.log(`READY http://127.0.0.1:${(server.address() as { port: number }).port}`),
  );
} else if (mode === 'tributary') {
  // Tributary as configured by the environment (embedded serve, or API only on PostgreSQL).
  const config = { ...loadConfig(), port: 0, host: '127.0.0.1' };
  const roles = { api: true, worker: process.env.BENCH_WORKER === '1' };
  const platform = await Platform.start(config, roles, { logger: pino({ level: 'silent' }) });
  for (const tenant of benchTenants(Number(process.env.BENCH_TENANTS ?? 1))) {
    await platform.store.createTenant({ id: tenant, name: tenant }).catch(() => {});
    await platform.store.putVariable(tenant, 'RECEIVER', process.env.BENCH_RECEIVER ?? 'http://127.0.0.1:9');
    // A store the history part grew already has the flow, from an earlier process.
    if (!(await platform.store.findFlowByKey(tenant, BENCH_FLOW.key))) await publish(platform, tenant, BENCH_FLOW);
  }
  console.log(`READY ${platform.url}`);
  process.on('SIGTERM', () => void platform.close().then(() => process.exit(0)));
} else if (mode === 'neighbours') {
  // Two tenants on one deployment: `flood`, whose flow is costly, and `light` (bench/fairness.ts).
  const config = { ...loadConfig(), port: 0, host: '127.0.0.1' };
  const roles = { api: true, worker: process.env.BENCH_WORKER === '1' };
  const platform = await Platform.start(config, roles, { logger: pino({ level: 'silent' }) });
  for (const [tenant, document] of [
    ['flood', FLOOD_FLOW],
    ['flood', BIG_BODY_FLOW],
    ['flood', SLOW_FLOW],
    ['light', LIGHT_FLOW],
  ] as const) {
    await platform.store.createTenant({ id: tenant, name: tenant }).catch(() => {});
    await platform.store.putVariable(tenant, 'RECEIVER', process.env.BENCH_RECEIVER!);
    await publish(platform, tenant, document);
  }
  // An operator's credentials, for the details of /readyz (the event-loop lag).
  const operator = await createClientCredentials(platform.store, { operator: true });
  console.log(`READY ${platform.url} ${operator.client_id}:${operator.client_secret}`);
  process.on('SIGTERM', () => void platform.close().then(() => process.exit(0)));
} else if (mode === 'bullmq-baseline') {
  // The same work written by hand on raw BullMQ: same expressions, same HTTP call, same concurrency.
  const config = loadConfig();
  const map = jsonata(MAP_EXPRESSION);
  const filter = jsonata(FILTER_EXPRESSION);
  const receiver = process.env.BENCH_RECEIVER!;
  const worker = new Worker(
    BASELINE.queue,
    async (job) => {
      const bindings = { input: job.data };
      const mapped = await map.evaluate(job.data, bindings);
      if (!truthy(await filter.evaluate(job.data, bindings))) return;
      const response = await fetch(`${receiver}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': `${job.id}.send` },
        body: JSON.stringify(mapped),
      });
      await response.arrayBuffer();
      if (!response.ok) throw new Error(`receiver answered ${response.status}`);
    },
    {
      connection: redisOptions(config.redisUrl, 'worker'),
      prefix: config.redisPrefix,
      concurrency: workerConcurrency(config, false),
    },
  );
  await worker.waitUntilReady();
  console.log('READY baseline');
  process.on('SIGTERM', () => void worker.close().then(() => process.exit(0)));
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
