/**
 * `npm run bench`: Tributary measured beside the machine's limits, in the same run.
 * (a) intake: POST /hooks at 50 connections vs a bare Express 5 JSON handler (and, for reference, node:http alone);
 * (b) engine: transform -> filter -> http.request runs per second vs a hand-written BullMQ worker, without
 *     tracing and exporting traces;
 * (c) refund sync: GraphQL cost, throughput against a throttled shop, webhook-to-ERP latency (bench/refund.ts);
 * (d) Orders > Import List: orders/s unthrottled and throttled, worker peak RSS at 1,000 and 10,000 orders
 * (bench/import.ts).
 * (e) expressions: the cost of the expression sandbox per evaluation, against evaluating in the process
 * (bench/expressions.ts).
 * (f) noisy neighbours: one tenant's end-to-end latency alone and while another floods (bench/fairness.ts).
 * (f') slow I/O: the same while another tenant's 300 runs wait 30 s each on their outside system, and after the worker
 * was killed and another took over (bench/fairness.ts).
 * (g) big bodies: the same, and the event loop, while another tenant sends 1 MB bodies (bench/fairness.ts).
 * (h) loops: items/s through a 1,000-item loop beside the same calls as 1,000 webhooks (bench/loop.ts).
 * (i) Redis Cluster: the engine's drain on one Redis and on a local cluster of 3 masters and 3 replicas.
 * (j) months of history: the reads users and operators make, on an empty store and at BENCH_HISTORY_RUNS runs
 * (default 1,000,000) over 60 days, with the growth factor (bench/history.ts).
 * BENCH_ONLY=footprint|intake|engine|refund|import|expressions|fairness|slow-io|big-bodies|loop|cluster|history runs one
 * part.
 * Needs Redis and PostgreSQL as for `npm test`. Prints a JSON line and a markdown table.
 */
import http from 'node:http';
import os from 'node:os';
import { Queue } from 'bullmq';
import { redisOptions } from '../bin/redis.ts';
import { freePortRun, LocalRedisCluster } from '../test/support/redis-cluster.ts';
import { cpuMsOf } from './cpu.ts';
import { orderCost } from '../operations/shopify/order-record.ts';
import { BASELINE, benchTenants, sampleOrder } from './flows.ts';
import { measureImport } from './import.ts';
import { measureRefunds } from './refund.ts';
import { measureExpressions } from './expressions.ts';
import { FLOOD_RUN_MS, measureBigBodiesPart, measureFairness, measureSlowNeighbourPart } from './fairness.ts';
import { cpuWindow } from './cpu.ts';
import { drainEngine, ENGINE_RUNS, type Receiver, startReceiver } from './engine.ts';
import { CONNECTIONS, type IntakeFigures, loadIntake } from './intake.ts';
import { measureFootprint } from './footprint.ts';
import { measureHistory } from './history.ts';
import { measureLoop } from './loop.ts';
import { cleanup, isolation, memoryMb, POSTGRES_URL, REDIS_URL, settledRssMb, start, stop } from './processes.ts';

async function main() {
  const results: Record<string, unknown> = {
    machine: { cpus: os.cpus().length, node: process.version },
    connections: CONNECTIONS,
  };
  const receiver = await startReceiver();

  const only = process.env.BENCH_ONLY;
  if (!only || only === 'footprint') results.footprint = await measureFootprint();
  if (!only || only === 'intake') await measureIntake(results, receiver.url);
  if (!only || only === 'engine') await measureEngine(results, receiver);
  if (!only || only === 'refund') await measureRefunds(results);
  if (!only || only === 'expressions') await measureExpressions(results);
  if (!only || only === 'import') await measureImport(results);
  if (!only || only === 'fairness') await measureFairness(results);
  if (!only || only === 'slow-io') await measureSlowNeighbourPart(results);
  if (!only || only === 'big-bodies') await measureBigBodiesPart(results);
  if (!only || only === 'loop') await measureLoop(results);
  if (!only || only === 'cluster') await measureCluster(results, receiver);
  if (!only || only === 'history') await measureHistory(results);
  await receiver.close();
  report(results);
}

async function measureIntake(results: Record<string, unknown>, receiverUrl: string) {
  const tsx = ['--import', 'tsx'];
  const measure = async (mode: string, env: Record<string, string>) => {
    const server = await start([...tsx, 'bench/child.ts', mode], env);
    // Idle: once startup's garbage is collected and its memory given back.
    const idleRssMb = await settledRssMb(server.child.pid);
    const figures = await loadIntake(server.detail, server.child.pid);
    const loaded = memoryMb(server.child.pid);
    await stop(server.child);
    return { ...figures, memory: { idleRssMb, peakRssMb: loaded?.peakRssMb } };
  };
  const bareFigures = await measure('bare-express', {});
  const bareNodeFigures = await measure('bare-node', {});
  const embeddedFigures = await measure('tributary', {
    ...isolation(),
    BENCH_WORKER: '1',
    BENCH_RECEIVER: receiverUrl,
    DATABASE_URL: '',
  });
  const apiFigures = await measure('tributary', {
    ...isolation(),
    DATABASE_URL: POSTGRES_URL,
    BENCH_RECEIVER: receiverUrl,
  });
  results.intake = {
    bareExpress: bareFigures,
    bareNodeHttp: bareNodeFigures,
    embeddedServe: {
      ...embeddedFigures,
      ratio: +(embeddedFigures.requestsPerSecond / bareFigures.requestsPerSecond).toFixed(2),
    },
    apiOnPostgres: { ...apiFigures, ratio: +(apiFigures.requestsPerSecond / bareFigures.requestsPerSecond).toFixed(2) },
  };
}

/**
 * A collector standing in for an OpenTelemetry one: takes OTLP/HTTP trace exports and counts their bytes
 * (what it costs the worker to make and send them is what is measured).
 */
async function startTraceSink() {
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    get bytes() {
      return bytes;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** (b) engine: fill the queue first, then time a worker draining it; without tracing, then exporting traces. */
async function measureEngine(results: Record<string, unknown>, receiver: Receiver) {
  const tsx = ['--import', 'tsx'];
  const untraced = await drainEngine(receiver, {});
  const traceSink = await startTraceSink();
  const traced = await drainEngine(receiver, {
    OTEL_EXPORTER_OTLP_ENDPOINT: traceSink.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
  });
  await traceSink.close();

  const baselineEnv = isolation();
  const queue = new Queue(BASELINE.queue, {
    connection: redisOptions(REDIS_URL, 'producer'),
    prefix: baselineEnv.REDIS_PREFIX,
  });
  for (let i = 0; i < ENGINE_RUNS; i += 500) {
    await queue.addBulk(
      Array.from({ length: Math.min(500, ENGINE_RUNS - i) }, (_, k) => ({
        name: 'run',
        data: { body: sampleOrder(i + k), headers: {}, query: {} },
      })),
    );
  }
  receiver.reset();
  const baseline = await start([...tsx, 'bench/child.ts', 'bullmq-baseline'], {
    ...baselineEnv,
    BENCH_RECEIVER: receiver.url,
  });
  const baselineReady = performance.now();
  const baselineCpu = cpuWindow();
  await receiver.waitFor(ENGINE_RUNS);
  const baselineSeconds = (performance.now() - baselineReady) / 1000;
  const baselineCpuMs = baselineCpu(baseline.child.pid, ENGINE_RUNS);
  await stop(baseline.child);
  await queue.obliterate({ force: true });
  await queue.close();

  const tributaryRate = ENGINE_RUNS / untraced.seconds;
  const tracedRate = ENGINE_RUNS / traced.seconds;
  const baselineRate = ENGINE_RUNS / baselineSeconds;
  results.engine = {
    runs: ENGINE_RUNS,
    tributaryRunsPerSecond: Math.round(tributaryRate),
    bullmqBaselineRunsPerSecond: Math.round(baselineRate),
    ratio: +(tributaryRate / baselineRate).toFixed(2),
    workerStartSeconds: +untraced.startSeconds.toFixed(2),
    // CPU milliseconds per run during the drain: the worker process, PostgreSQL, Redis, the rest (receiver, load).
    cpuMsPerRun: { tributary: untraced.cpuMs, bullmqBaseline: baselineCpuMs },
    workerPeakRssMb: untraced.peakRssMb,
    // The same drain with every span exported over OTLP/HTTP (protobuf) to a local collector.
    traced: {
      runsPerSecond: Math.round(tracedRate),
      ratioToUntraced: +(tracedRate / tributaryRate).toFixed(2),
      ratioToBullmq: +(tracedRate / baselineRate).toFixed(2),
      cpuMsPerRun: traced.cpuMs,
      workerPeakRssMb: traced.peakRssMb,
      exportedBytesPerRun: Math.round(traceSink.bytes / ENGINE_RUNS),
    },
  };
}

/** Tenants the cluster part spreads its runs over, one per slot group when there are three. */
const CLUSTER_TENANTS = 3;

/**
 * (i) the same drain, its runs spread over three tenants, on one Redis and on a Redis Cluster of 3 masters with a
 * replica each: with the run path in one slot group, then in three (a tenant in each). Each master's CPU per run
 * (intake and drain) shows how the run path's Redis work spreads.
 */
async function measureCluster(results: Record<string, unknown>, receiver: Receiver) {
  const single = await drainEngine(receiver, {}, {}, CLUSTER_TENANTS);
  const cluster = await LocalRedisCluster.start({ basePort: await freePortRun(6) });
  try {
    const onCluster = async (groups: number) => {
      const placed = benchTenants(CLUSTER_TENANTS).map((tenant, i) => `${tenant}=${i % groups}`);
      const before = cluster.nodes.map((node) => cpuMsOf(node.child?.pid));
      const drained = await drainEngine(
        receiver,
        {},
        { REDIS_CLUSTER_NODES: cluster.seeds, RUN_GROUPS: String(groups), RUN_GROUP_TENANTS: placed.join(',') },
        CLUSTER_TENANTS,
      );
      const { masters } = await cluster.roles();
      const perMaster = cluster.nodes
        .map((node, i) => ({ node, ms: (cpuMsOf(node.child?.pid) - before[i]) / ENGINE_RUNS }))
        .filter(({ node }) => masters.includes(node.port))
        .map(({ ms }) => +ms.toFixed(3))
        .sort((a, b) => b - a);
      return { runsPerSecond: Math.round(ENGINE_RUNS / drained.seconds), redisMsPerRunByMaster: perMaster };
    };
    const oneGroup = await onCluster(1);
    const threeGroups = await onCluster(3);
    const singleRate = ENGINE_RUNS / single.seconds;
    results.cluster = {
      runs: ENGINE_RUNS,
      tenants: CLUSTER_TENANTS,
      oneRedisRunsPerSecond: Math.round(singleRate),
      clusterRunsPerSecond: oneGroup.runsPerSecond,
      ratio: +(oneGroup.runsPerSecond / singleRate).toFixed(2),
      oneRedisCpuMsPerRun: single.cpuMs,
      oneGroup,
      threeGroups,
    };
  } finally {
    await cluster.stop();
  }
}

/** A row of the report's table: what was measured, Tributary's figure, the machine's limit, their ratio. */
const tableRow = (measure: string, tributary: string, limit = '-', ratio: string | number = '-') =>
  `| ${measure} | ${tributary} | ${limit} | ${ratio} |`;

const latencies = (figures: { p50Ms: number; p99Ms: number }) => `p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms`;
/** The light tenant's end-to-end latencies in the noisy-neighbour parts. */
const light = (figures: { p50Ms: number; p99Ms: number; received: number; sent: number }) =>
  `${latencies(figures)} (${figures.received} of ${figures.sent} arrived)`;

function report(results: Record<string, unknown>) {
  console.log(JSON.stringify(results));
  const rows = [tableRow('measure', 'Tributary', 'limit of the machine', 'ratio'), '|---|---|---|---|'];
  const intake = results.intake as Record<string, IntakeFigures & { ratio?: number }> | undefined;
  if (intake) {
    const bare = intake.bareExpress;
    const row = (name: string, figures: IntakeFigures & { ratio?: number }) =>
      tableRow(
        `${name}, req/s`,
        `${figures.requestsPerSecond} (${latencies(figures)})`,
        `bare Express ${bare.requestsPerSecond} (${latencies(bare)})`,
        figures.ratio,
      );
    const node = intake.bareNodeHttp;
    const memory = (figures: IntakeFigures) =>
      tableRow(
        '  its resident memory',
        `idle ${figures.memory?.idleRssMb} MB, peak under the load ${figures.memory?.peakRssMb} MB`,
      );
    rows.push(
      row('intake, embedded serve (PGlite + worker)', intake.embeddedServe),
      memory(intake.embeddedServe),
      row('intake, API on PostgreSQL', intake.apiOnPostgres),
      memory(intake.apiOnPostgres),
      tableRow(
        'for reference: the same bare handler on node:http alone, req/s',
        '-',
        `${node.requestsPerSecond} (${latencies(node)})`,
      ),
    );
  }
  const footprint = results.footprint as Awaited<ReturnType<typeof measureFootprint>> | undefined;
  if (footprint) {
    const unknown = footprint.unknownUrls as { sent: number; heapUsedBeforeMb: number; heapUsedAfterMb: number };
    rows.push(
      tableRow(
        'resident memory, idle, as `npx tributary` starts it',
        `serve ${footprint.serveIdleRssMb} MB; on PostgreSQL: api ${footprint.apiIdleRssMb} MB, worker ${footprint.workerIdleRssMb} MB`,
      ),
      tableRow(
        `serve's heap in use, cache full, before and after ${unknown.sent} more deliveries to flow URLs naming no flow`,
        `${unknown.heapUsedBeforeMb} MB -> ${unknown.heapUsedAfterMb} MB`,
      ),
    );
  }
  const engine = results.engine as Record<string, number> | undefined;
  if (engine)
    rows.push(
      tableRow(
        'engine, transform -> filter -> http.request, runs/s',
        `${engine.tributaryRunsPerSecond} (worker peak RSS ${engine.workerPeakRssMb} MB)`,
        `raw BullMQ worker ${engine.bullmqBaselineRunsPerSecond}`,
        engine.ratio,
      ),
    );
  const traced = (results.engine as { traced?: Record<string, number> } | undefined)?.traced;
  if (engine && traced)
    rows.push(
      // Tracing's own limit is the untraced drain: it may cost at most a tenth of it.
      tableRow(
        'engine, the same, exporting traces (OTLP/HTTP protobuf), runs/s',
        `${traced.runsPerSecond} (${traced.ratioToBullmq} of raw BullMQ; ${traced.exportedBytesPerRun} bytes/run exported)`,
        `untraced, same run: ${engine.tributaryRunsPerSecond} (at least 0.9 of it)`,
        traced.ratioToUntraced,
      ),
    );
  const cluster = results.cluster as any;
  if (cluster) {
    const busiest = (figures: { redisMsPerRunByMaster: number[] }) => figures.redisMsPerRunByMaster[0];
    rows.push(
      tableRow(
        `engine, the same over ${cluster.tenants} tenants, on a Redis Cluster (3 masters, 3 replicas, this machine), runs/s`,
        `one slot group ${cluster.oneGroup.runsPerSecond}; three ${cluster.threeGroups.runsPerSecond}`,
        `one Redis, same run: ${cluster.oneRedisRunsPerSecond}`,
        cluster.ratio,
      ),
      tableRow(
        'Redis CPU per run on each master (intake and drain), ms, busiest first',
        `one slot group ${cluster.oneGroup.redisMsPerRunByMaster.join(' / ')}; ` +
          `three ${cluster.threeGroups.redisMsPerRunByMaster.join(' / ')}`,
        `the busiest master's third: ${(busiest(cluster.oneGroup) / 3).toFixed(3)}`,
        (busiest(cluster.threeGroups) / busiest(cluster.oneGroup)).toFixed(2),
      ),
    );
  }
  const refund = results.refund as any;
  if (refund) {
    const { typicalRefund: cost, exportedRefund: exported, webhookToErp: latency } = refund;
    const engineFigures = refund.engineAgainstThrottledShop;
    // Shopify admits a query when its requested cost fits the bucket: requested, not actual, decides bursts.
    const costRow = (name: string, figures: any) =>
      tableRow(
        `${name} (${figures.queries})`,
        `requested ${figures.requested}, actual ${figures.actual} points`,
        `1.5x the least requested for the same data (${figures.least}) = ${Math.floor(1.5 * figures.least)}`,
        figures.ratio,
      );
    rows.push(
      costRow('refund sync, GraphQL cost of a typical refund from its webhook', cost),
      costRow("refund export, the import's poll of 3 orders", exported.poll),
      costRow('refund export, the same refund exported from its order', exported.export),
      tableRow(
        `refund sync on a ${refund.shopRestoreRate} points/s shop, refunds/s`,
        `${engineFigures.refundsPerSecond} (${engineFigures.refunds} refunds, ${engineFigures.failed} failed, ` +
          `${engineFigures.throttledAnswers} THROTTLED answers waited out)`,
        `restore rate / actual cost = ${refund.refundsPerSecondAllowed}`,
        (engineFigures.refundsPerSecond / refund.refundsPerSecondAllowed).toFixed(2),
      ),
      tableRow(
        'refund sync, webhook -> ERP latency, unthrottled',
        `${latencies(latency)} (${latency.refunds} refunds, one at a time)`,
      ),
    );
  }
  const imported = results.import as any;
  if (imported) {
    const row = (name: string, figures: any) =>
      tableRow(
        name,
        `${figures.ordersPerSecond} orders/s (${figures.orders} in ${figures.seconds} s); ` +
          `worker peak RSS ${figures.workerPeakRssMb} MB`,
      );
    const { throttled } = imported;
    rows.push(
      row('import, 1,000 orders, unthrottled', imported.unthrottled1k),
      row('import, 10,000 orders, unthrottled', imported.unthrottled10k),
      tableRow(
        `import on a ${imported.shopRestoreRate} points/s shop`,
        `${throttled.ordersPerSecond} orders/s (${throttled.orders} orders)`,
        `restore rate / ${orderCost()} points per order = ${throttled.boundOrdersPerSecond}`,
        (throttled.ordersPerSecond / throttled.boundOrdersPerSecond).toFixed(2),
      ),
    );
  }
  const expressions = results.expressions as any;
  if (expressions) {
    const row = (name: string, figures: any) =>
      tableRow(
        name,
        `${figures.microsecondsPerEvaluation} µs each, ${figures.evaluationsPerSecond}/s, ` +
          `caller CPU ${figures.callerCpuMicrosecondsPerEvaluation} µs each`,
      );
    rows.push(
      row('expression evaluated in the process', expressions.inProcess),
      row('the same expression in the sandbox, one at a time', expressions.sandboxOneAtATime),
      row('the same expression in the sandbox, 32 in flight', expressions.sandbox32InFlight),
    );
  }
  const fairness = results.fairness as any;
  if (fairness) {
    for (const [name, measured] of [
      ['PostgreSQL, defaults', fairness.defaults],
      ['PostgreSQL, TENANT_CONCURRENCY=32 of 64 slots', fairness.tenantConcurrency],
      ['embedded serve, defaults', fairness.embedded],
    ]) {
      if (!measured) continue;
      // The target: twice the unloaded p99, plus one of the flood's runs (a quarter of a second) it may wait behind.
      const limit = 2 * measured.lightAlone.p99Ms + FLOOD_RUN_MS;
      rows.push(
        tableRow(`noisy neighbours (${name}): light tenant end-to-end, alone`, light(measured.lightAlone)),
        tableRow(
          `the same while another tenant floods (${measured.floodAccepted} of ${measured.floodSent} webhooks ` +
            `accepted in ${measured.floodSeconds} s, the rest 429)`,
          light(measured.lightDuringFlood),
          `2 x p99 alone + one flood run (${FLOOD_RUN_MS} ms) = ${limit} ms; /readyz not ready ` +
            `${measured.readyzDuringFlood.notReady} of ${measured.readyzDuringFlood.checks} checks`,
          (measured.lightDuringFlood.p99Ms / limit).toFixed(2),
        ),
      );
    }
  }
  const slow = results.slowNeighbour as any;
  if (slow)
    rows.push(
      tableRow('slow I/O: light tenant end-to-end, alone', light(slow.lightAlone)),
      tableRow(
        `the same while another tenant's ${slow.slowRuns} runs wait ${slow.slowMs / 1000} s each on their system`,
        light(slow.lightDuring),
      ),
      tableRow(
        'the same once the worker was killed and another took the slow runs over',
        light(slow.lightAfterRestart),
      ),
    );
  for (const [deployment, big] of Object.entries((results.bigBodies ?? {}) as Record<string, any>)) {
    const loop = (figures: any) =>
      `/healthz p50 ${figures.healthzP50Ms} ms, p99 ${figures.healthzP99Ms} ms; event-loop lag p99 up to ${figures.lagMs} ms`;
    rows.push(
      tableRow(`big bodies (${deployment}): light tenant end-to-end, alone`, light(big.lightAlone), loop(big.alone)),
      tableRow(
        `the same while another tenant sends 1 MB bodies (${big.floodAccepted} of ${big.floodSent} accepted)`,
        light(big.lightDuringFlood),
        loop(big.during),
      ),
    );
  }
  const loop = results.loop as any;
  if (loop)
    rows.push(
      tableRow(
        `loop: ${loop.items} items of one run, ${loop.loopConcurrency} at a time, items/s`,
        `${loop.loopItemsPerSecond}`,
        `the same calls as ${loop.items} webhooks: ${loop.webhookRunsPerSecond} runs/s`,
        loop.ratio,
      ),
    );
  console.log(`\n${rows.join('\n')}\n`);
}

main().then(cleanup, async (error) => {
  console.error(error);
  await cleanup();
  process.exit(1);
});
