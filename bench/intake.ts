/** Load on a flow URL: 50 connections posting an order, as the intake part and the history part measure it. */
import autocannon from 'autocannon';
import { cpuWindow } from './cpu.ts';
import { sampleOrder } from './flows.ts';

export const INTAKE_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
export const CONNECTIONS = 50;

export interface IntakeFigures {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
  /** CPU milliseconds per request: the server, PostgreSQL, Redis, the rest (mostly the load generator). */
  cpuMsPerRequest: ReturnType<ReturnType<typeof cpuWindow>>;
  /** The server's resident memory idle and at its peak under the load (MB). */
  memory?: { idleRssMb?: number; peakRssMb?: number };
}

/** The figures of a load every request of which was accepted: a figure of refusals is no figure of intake. */
export function accepted(figures: IntakeFigures): IntakeFigures {
  if (figures.non2xx + figures.errors > 0)
    throw new Error(`intake answered ${figures.non2xx} non-2xx and ${figures.errors} errors under the load`);
  return figures;
}

/**
 * Posts to `url`'s bench flow for INTAKE_SECONDS after a 2 s warm-up; with `during`, the load starts with it and
 * lasts until it has finished too (the intake of a deployment while its retention sweep runs, say).
 */
export async function loadIntake(
  url: string,
  serverPid: number | undefined,
  during?: () => Promise<unknown>,
): Promise<IntakeFigures> {
  const options = {
    url: `${url}/hooks/bench/bench`,
    method: 'POST' as const,
    connections: CONNECTIONS,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(sampleOrder(1)),
  };
  await autocannon({ ...options, duration: 2 }); // warm-up: JIT, caches, connection pools
  const cpu = cpuWindow();
  let result: autocannon.Result;
  if (during) {
    const finished = Promise.all([during(), new Promise((resolve) => setTimeout(resolve, INTAKE_SECONDS * 1000))]);
    result = await new Promise<autocannon.Result>((resolve, reject) => {
      const load = autocannon({ ...options, duration: 24 * 3600 }, (error, figures) =>
        error ? reject(error) : resolve(figures),
      );
      finished.then(
        () => load.stop(),
        (error) => {
          load.stop();
          reject(error);
        },
      );
    });
    await finished;
  } else result = await autocannon({ ...options, duration: INTAKE_SECONDS });
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
    cpuMsPerRequest: cpu(serverPid, result.requests.total),
  };
}
