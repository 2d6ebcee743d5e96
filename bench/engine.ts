/** The engine's drain: webhooks queued through an API process, then a worker process timed draining them. */
import http from 'node:http';
import { cpuWindow } from './cpu.ts';
import { benchTenants, sampleOrder } from './flows.ts';
import { CONNECTIONS } from './intake.ts';
import { isolation, memoryMb, POSTGRES_URL, start, stop } from './processes.ts';

export const ENGINE_RUNS = Number(process.env.BENCH_RUNS ?? 5000);

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** A receiver standing in for an ERP: counts requests, resolves when it has seen `target`. */
export async function startReceiver() {
  let count = 0;
  let waiter: { target: number; resolve: () => void } | undefined;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      if (waiter && count >= waiter.target) waiter.resolve();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    reset: () => void (count = 0),
    waitFor: (target: number) =>
      new Promise<void>((resolve) => (count >= target ? resolve() : (waiter = { target, resolve }))),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** `count` webhooks through the intake at `url`, to the bench tenants in turn. */
async function postMessages(url: string, count: number, tenants: string[]) {
  let next = 0;
  const send = async () => {
    while (next < count) {
      const id = next++;
      const response = await fetch(`${url}/hooks/${tenants[id % tenants.length]}/bench`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(sampleOrder(id)),
      });
      if (response.status !== 202) throw new Error(`intake answered ${response.status}`);
      await response.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, send));
}

/**
 * Queue ENGINE_RUNS webhooks through an API process, then time a worker (with `workerEnv`) draining them; both
 * processes with `env` (a Redis Cluster, say, or the schema of a store grown beforehand).
 */
export async function drainEngine(
  receiver: Receiver,
  workerEnv: Record<string, string>,
  env: Record<string, string> = {},
  tenants = 1,
) {
  const engineEnv = { ...isolation(), DATABASE_URL: POSTGRES_URL, ...env };
  const intake = await start(['--import', 'tsx', 'bench/child.ts', 'tributary'], {
    ...engineEnv,
    BENCH_RECEIVER: receiver.url,
    BENCH_TENANTS: String(tenants),
  });
  await postMessages(intake.detail, ENGINE_RUNS, benchTenants(tenants));
  receiver.reset();
  const engineStart = performance.now();
  const worker = await start(['bin/tributary.js', 'worker'], { ...engineEnv, ...workerEnv });
  const workerReady = performance.now();
  const engineCpu = cpuWindow();
  await receiver.waitFor(ENGINE_RUNS);
  const seconds = (performance.now() - workerReady) / 1000;
  const cpuMs = engineCpu(worker.child.pid, ENGINE_RUNS);
  const memory = memoryMb(worker.child.pid);
  await stop(worker.child);
  await stop(intake.child);
  return { seconds, cpuMs, peakRssMb: memory?.peakRssMb, startSeconds: (workerReady - engineStart) / 1000 };
}
