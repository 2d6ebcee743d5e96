/**
 * (f) noisy neighbours: tenant `light` sends one webhook a second; its end-to-end latency (webhook
 * sent -> its flow's call received) is measured alone, then while tenant `flood` sends all it can
 * (50 connections) to a flow whose expression costs a sandbox process about a quarter of a second.
 * An API process and a worker process on PostgreSQL, with the default settings and again with
 * TENANT_CONCURRENCY at half the worker's slots. Also counts `/readyz` answers during the flood.
 */
import http from 'node:http';
import autocannon from 'autocannon';
import { bigBody } from './flows.ts';
import { isolation, POSTGRES_URL, start, stop } from './processes.ts';

const FLOOD_SECONDS = Number(process.env.BENCH_FLOOD_SECONDS ?? 20);
/** About what one run of the flooding tenant's flow takes (its expression, in a sandbox process). */
export const FLOOD_RUN_MS = 250;
/** The slow neighbour: this many runs, each waiting this long on its outside system. */
const SLOW_RUNS = 300;
const SLOW_MS = 30_000;
const QUIET_SECONDS = 10;
/** How long the light tenant's last runs may take to arrive after the flood before they count as lost. */
const SETTLE_MS = 60_000;

interface Latencies {
  sent: number;
  received: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** How long the flow URL took to answer the light tenant's webhooks. */
  webhookAnswerP50Ms: number;
  webhookAnswerP99Ms: number;
}

/**
 * Receives both tenants' calls; the light tenant's carry when their webhook was sent. `/slow` answers after
 * SLOW_MS: an outside system that takes its time, within every limit.
 */
async function startReceiver() {
  const latencies = new Map<number, number>();
  let floodCalls = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/light') {
        const { sentAt } = JSON.parse(Buffer.concat(chunks).toString()) as { sentAt: number };
        latencies.set(sentAt, Date.now() - sentAt);
      } else floodCalls++;
      const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      if (req.url === '/slow') setTimeout(answer, SLOW_MS).unref();
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    latencies,
    floodCalls: () => floodCalls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/** The light tenant sends one webhook a second for `seconds`; returns when each was sent, and how long answers took. */
async function sendLight(url: string, seconds: number): Promise<{ sent: number[]; answerMs: number[] }> {
  const sent: number[] = [];
  const answerMs: number[] = [];
  for (let i = 0; i < seconds; i++) {
    const sentAt = Date.now();
    const response = await fetch(`${url}/hooks/light/light`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sentAt }),
    });
    if (response.status === 202) sent.push(sentAt);
    await response.arrayBuffer();
    answerMs.push(Date.now() - sentAt);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, sentAt + 1000 - Date.now())));
  }
  return { sent, answerMs };
}

async function settle(
  { sent, answerMs }: { sent: number[]; answerMs: number[] },
  latencies: Map<number, number>,
): Promise<Latencies> {
  const deadline = Date.now() + SETTLE_MS;
  while (sent.some((at) => !latencies.has(at)) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 200));
  const measured = sent.filter((at) => latencies.has(at)).map((at) => latencies.get(at)!);
  const sorted = measured.sort((a, b) => a - b);
  const answers = answerMs.sort((a, b) => a - b);
  return {
    sent: sent.length,
    received: sorted.length,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted[sorted.length - 1] ?? Number.NaN,
    webhookAnswerP50Ms: percentile(answers, 50),
    webhookAnswerP99Ms: percentile(answers, 99),
  };
}

/** `/readyz` once a second while `during` runs: how many answers were not 200. */
async function watchReadiness<T>(url: string, during: Promise<T>) {
  let checks = 0;
  let notReady = 0;
  let done = false;
  const watching = (async () => {
    while (!done) {
      const response = await fetch(`${url}/readyz`).catch(() => undefined);
      checks++;
      if (response?.status !== 200) notReady++;
      await response?.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  const result = await during;
  done = true;
  await watching;
  return { result, checks, notReady };
}

/**
 * Both tenants' flows on a deployment, its settings the defaults (the flooding tenant meets its intake quota as it
 * would in production) but for `settings`: an API process and a worker process on PostgreSQL, or the embedded
 * `serve` (`npm start`: API and worker in one process, on PGlite). `measure` is given the API's address and, on
 * PostgreSQL, a way to kill the worker and start another.
 */
async function withNeighbours<T>(
  settings: Record<string, string>,
  measure: (
    url: string,
    receiver: Awaited<ReturnType<typeof startReceiver>>,
    restartWorker: () => Promise<void>,
  ) => Promise<T>,
  deployment: 'postgres' | 'embedded' = 'postgres',
): Promise<T> {
  const receiver = await startReceiver();
  const env = {
    ...isolation(),
    ...(deployment === 'embedded' ? { BENCH_WORKER: '1', DATABASE_URL: '' } : { DATABASE_URL: POSTGRES_URL }),
    BENCH_RECEIVER: receiver.url,
    TENANT_DELIVERIES_PER_SECOND: '',
    TENANT_DELIVERY_BURST: '',
    ...settings,
  };
  const api = await start(['--import', 'tsx', 'bench/child.ts', 'neighbours'], env);
  let worker = deployment === 'postgres' ? await start(['bin/tributary.js', 'worker'], env) : undefined;
  const restartWorker = async () => {
    if (!worker) throw new Error('the embedded serve has no worker process of its own');
    worker.child.kill('SIGKILL');
    worker = await start(['bin/tributary.js', 'worker'], env);
  };
  try {
    return await measure(api.detail.split(' ')[0], receiver, restartWorker);
  } finally {
    if (worker) await stop(worker.child);
    await stop(api.child);
    await receiver.close();
  }
}

/** Both measures on a deployment of its own, its settings the defaults but for `settings`. */
function measureDeployment(settings: Record<string, string>, deployment: 'postgres' | 'embedded' = 'postgres') {
  return withNeighbours(
    settings,
    async (url, receiver) => {
      const alone = await settle(await sendLight(url, QUIET_SECONDS), receiver.latencies);
      const flood = autocannon({
        url: `${url}/hooks/flood/heavy`,
        method: 'POST',
        connections: 50,
        duration: FLOOD_SECONDS,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ order: 1 }),
      });
      const [light, watched] = await Promise.all([sendLight(url, FLOOD_SECONDS), watchReadiness(url, flood)]);
      const during = await settle(light, receiver.latencies);
      return {
        settings,
        floodSeconds: FLOOD_SECONDS,
        floodSent: watched.result.requests.total,
        floodAccepted: watched.result['2xx'],
        floodRefused429: watched.result.statusCodeStats?.['429']?.count ?? 0,
        floodRunsDone: receiver.floodCalls(),
        lightAlone: alone,
        lightDuringFlood: during,
        readyzDuringFlood: { checks: watched.checks, notReady: watched.notReady },
      };
    },
    deployment,
  );
}

/**
 * `/healthz` every 100 ms, and the event-loop lag `/readyz` reports (to an operator: `authorization`)
 * every second, while `during` runs.
 */
async function watchEventLoop<T>(url: string, authorization: string, during: Promise<T>) {
  const healthz: number[] = [];
  const lags: number[] = [];
  let done = false;
  const probing = (async () => {
    while (!done) {
      const sentAt = performance.now();
      await fetch(`${url}/healthz`).then((response) => response.arrayBuffer());
      healthz.push(performance.now() - sentAt);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  const sampling = (async () => {
    while (!done) {
      const readiness = await fetch(`${url}/readyz`, { headers: { authorization } }).then((response) =>
        response.json(),
      );
      lags.push(readiness.checks.eventLoopLagMs);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  const result = await during;
  done = true;
  await Promise.all([probing, sampling]);
  const sorted = healthz.sort((a, b) => a - b);
  return {
    result,
    healthzP50Ms: Math.round(percentile(sorted, 50)),
    healthzP99Ms: Math.round(percentile(sorted, 99)),
    eventLoopLagP99MaxMs: Math.max(...lags),
  };
}

/**
 * (g) big bodies: tenant `flood` sends about 22 bodies of 1 MB a second to a flow whose filter walks
 * every item: the light tenant's end-to-end latency, `/healthz` and the API process's event-loop lag,
 * alone and during. On the embedded `serve` (API and worker in one process, PGlite), and on an API
 * process and a worker process on PostgreSQL.
 */
async function measureBigBodies(deployment: 'embedded' | 'postgres') {
  const receiver = await startReceiver();
  const env = {
    ...isolation(),
    BENCH_RECEIVER: receiver.url,
    ...(deployment === 'embedded' ? { BENCH_WORKER: '1' } : { DATABASE_URL: POSTGRES_URL }),
  };
  const serve = await start(['--import', 'tsx', 'bench/child.ts', 'neighbours'], env);
  const worker = deployment === 'postgres' ? await start(['bin/tributary.js', 'worker'], env) : undefined;
  try {
    const [url, operator] = serve.detail.split(' ');
    const authorization = `Basic ${Buffer.from(operator).toString('base64')}`;
    const quiet = await watchEventLoop(url, authorization, sendLight(url, QUIET_SECONDS));
    const alone = await settle(quiet.result, receiver.latencies);
    const flood = autocannon({
      url: `${url}/hooks/flood/big`,
      method: 'POST',
      connections: 4,
      overallRate: 22,
      duration: FLOOD_SECONDS,
      headers: { 'content-type': 'application/json' },
      body: bigBody(),
    });
    const [light, watched] = await Promise.all([
      sendLight(url, FLOOD_SECONDS),
      watchEventLoop(url, authorization, flood),
    ]);
    const during = await settle(light, receiver.latencies);
    return {
      floodSent: watched.result.requests.total,
      floodAccepted: watched.result['2xx'],
      lightAlone: alone,
      lightDuringFlood: during,
      alone: { healthzP50Ms: quiet.healthzP50Ms, healthzP99Ms: quiet.healthzP99Ms, lagMs: quiet.eventLoopLagP99MaxMs },
      during: {
        healthzP50Ms: watched.healthzP50Ms,
        healthzP99Ms: watched.healthzP99Ms,
        lagMs: watched.eventLoopLagP99MaxMs,
      },
    };
  } finally {
    if (worker) await stop(worker.child);
    await stop(serve.child);
    await receiver.close();
  }
}

/** BENCH_DEPLOYMENT=embedded|postgres measures one of the two. */
export async function measureBigBodiesPart(results: Record<string, unknown>) {
  const deployments = (['embedded', 'postgres'] as const).filter(
    (name) => (process.env.BENCH_DEPLOYMENT ?? name) === name,
  );
  const bigBodies: Record<string, unknown> = {};
  for (const deployment of deployments) bigBodies[deployment] = await measureBigBodies(deployment);
  results.bigBodies = bigBodies;
}

/**
 * (f) slow I/O: tenant `flood` has SLOW_RUNS runs waiting SLOW_MS each on its outside system while the light tenant
 * sends one webhook a second: the light tenant's end-to-end latency alone, during, and once the worker was killed
 * and another started (the slow runs are taken over). An API process and a worker process on PostgreSQL, defaults.
 */
function measureSlowNeighbour() {
  // Every slow delivery accepted: the intake quota is not what is measured here.
  const unthrottled = { TENANT_DELIVERIES_PER_SECOND: '1000000', TENANT_DELIVERY_BURST: '1000000' };
  return withNeighbours(unthrottled, async (url, receiver, restartWorker) => {
    const alone = await settle(await sendLight(url, QUIET_SECONDS), receiver.latencies);
    const slow = await autocannon({
      url: `${url}/hooks/flood/slow`,
      method: 'POST',
      connections: 10,
      amount: SLOW_RUNS,
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    const during = await settle(await sendLight(url, FLOOD_SECONDS), receiver.latencies);
    await restartWorker();
    const afterRestart = await settle(await sendLight(url, FLOOD_SECONDS), receiver.latencies);
    return {
      slowRuns: slow['2xx'],
      slowMs: SLOW_MS,
      lightAlone: alone,
      lightDuring: during,
      lightAfterRestart: afterRestart,
    };
  });
}

export async function measureSlowNeighbourPart(results: Record<string, unknown>) {
  results.slowNeighbour = await measureSlowNeighbour();
}

/** BENCH_DEPLOYMENT=embedded|postgres measures one of the two. */
export async function measureFairness(results: Record<string, unknown>) {
  const fairness: Record<string, unknown> = {};
  if ((process.env.BENCH_DEPLOYMENT ?? 'postgres') === 'postgres') {
    fairness.defaults = await measureDeployment({});
    // What a shared deployment is advised to set: a tenant holds at most half the worker slots.
    fairness.tenantConcurrency = await measureDeployment({ TENANT_CONCURRENCY: '32', WORKER_CONCURRENCY: '64' });
  }
  // What `npm start` gives every newcomer.
  if ((process.env.BENCH_DEPLOYMENT ?? 'embedded') === 'embedded')
    fairness.embedded = await measureDeployment({}, 'embedded');
  results.fairness = fairness;
}
