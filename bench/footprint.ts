/**
 * Memory: the resident memory, settled after start, of each process as the CLI starts it (no
 * benchmark code loaded, no flow yet), and what 100,000 deliveries to flow URLs that name no flow
 * leave in the embedded `serve`'s heap once its flow-URL cache is full (anyone may send them).
 */
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { isolation, POSTGRES_URL, settledRssMb, start, stop } from './processes.ts';

const UNKNOWN_URLS = Number(process.env.BENCH_UNKNOWN_URLS ?? 100_000);

/** The process's JavaScript heap in use (MB), as its /metrics tells an operator. */
async function heapUsedMb(url: string, authorization: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization } })).text();
  const line = text.split('\n').find((metric) => metric.startsWith('tributary_nodejs_heap_size_used_bytes'));
  return Math.round(Number(line?.split(' ').pop()) / 1e6);
}

/** `count` POSTs to random flow URLs (the longest keys a URL segment takes), 50 at a time; the statuses seen. */
async function sendToUnknownUrls(url: string, count: number): Promise<Record<number, number>> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
  const statuses: Record<number, number> = {};
  const post = () =>
    new Promise<number>((resolve, reject) => {
      const n = Math.floor(Math.random() * 1e15).toString(36);
      const request = http.request(
        `${url}/hooks/t${n}/${`${n}${'k'.repeat(63)}`.slice(0, 63)}`,
        { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
        (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode!));
        },
      );
      request.on('error', reject);
      request.end('{}');
    });
  let sent = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (sent < count) {
        sent++;
        const status = await post();
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }),
  );
  agent.destroy();
  return statuses;
}

export async function measureFootprint() {
  const idle = async (role: string, env: Record<string, string>) => {
    const process = await start(['bin/tributary.js', role], env, /Tributary \S+ (?:on (\S+)|worker consuming)/);
    const rssMb = await settledRssMb(process.child.pid);
    return { rssMb, process, env };
  };
  const serve = await idle('serve', { ...isolation(), DATABASE_URL: '', PORT: '0', HOST: '127.0.0.1' });
  let unknownUrls: Record<string, unknown>;
  try {
    const operator = JSON.parse(
      execFileSync(process.execPath, ['bin/tributary.js', 'client', 'create', '--operator'], {
        env: { ...process.env, ...serve.env },
      }).toString(),
    );
    const url = serve.process.detail;
    const authorization = `Basic ${Buffer.from(`${operator.client_id}:${operator.client_secret}`).toString('base64')}`;
    // Heap in use counts garbage not yet collected: each figure is read after the same pause, the first
    // once the flow-URL cache is full (INTAKE_CACHE_ENTRIES, 10,000), the second after 100,000 more.
    const settledHeapMb = async () => {
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      return heapUsedMb(url, authorization);
    };
    await sendToUnknownUrls(url, 20_000);
    const before = await settledHeapMb();
    const statuses = await sendToUnknownUrls(url, UNKNOWN_URLS);
    unknownUrls = { sent: UNKNOWN_URLS, statuses, heapUsedBeforeMb: before, heapUsedAfterMb: await settledHeapMb() };
  } finally {
    await stop(serve.process.child);
  }
  const api = await idle('api', { ...isolation(), DATABASE_URL: POSTGRES_URL });
  await stop(api.process.child);
  const worker = await idle('worker', { ...isolation(), DATABASE_URL: POSTGRES_URL });
  await stop(worker.process.child);
  return {
    serveIdleRssMb: serve.rssMb,
    apiIdleRssMb: api.rssMb,
    workerIdleRssMb: worker.rssMb,
    unknownUrls,
  };
}
