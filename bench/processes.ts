/**
 * The processes a benchmark measures, each started in its own isolation (schema, data dir, Redis
 * prefix), and their cleanup.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Keyring } from '../engine/secrets/keyring.ts';

export const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

const children: ChildProcess[] = [];
const schemas: string[] = [];
const dirs: string[] = [];

export function isolation() {
  const suffix = randomBytes(4).toString('hex');
  const schema = `bench_${suffix}`;
  schemas.push(schema);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tributary-bench-'));
  dirs.push(dataDir);
  return {
    DATABASE_SCHEMA: schema,
    REDIS_PREFIX: `bench-${suffix}`,
    DATA_DIR: dataDir,
    SECRETS_KEY: Keyring.generateEntry('bench'),
    REDIS_URL,
    LOG_LEVEL: 'silent',
    // The benchmarks measure capacity: no tenant quota in the way (the noisy-neighbour part sets its own).
    TENANT_DELIVERIES_PER_SECOND: '1000000',
    TENANT_DELIVERY_BURST: '1000000',
    TENANT_MAX_QUEUED_RUNS: '0',
  };
}

/** Start a benchmark process and wait for its READY line. */
export function start(
  args: string[],
  env: Record<string, string>,
  ready = /READY ?(.*)|Tributary .* worker consuming/,
): Promise<{ child: ChildProcess; detail: string }> {
  // BENCH_NODE_FLAGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the measured processes.
  const flags = process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...flags, ...args], {
    // The receiver, the shop and the ERP stand-ins listen on 127.0.0.1.
    env: { ...process.env, OUTBOUND_PRIVATE_ADDRESSES: 'allow', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = ready.exec(output);
      if (match) resolve({ child, detail: (match[1] ?? '').trim() });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${output}`)));
  });
}

export async function stop(child: ChildProcess) {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
  child.kill('SIGKILL');
}

export async function cleanup() {
  for (const child of children) child.kill('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  for (const schema of schemas) await client.query(`drop schema if exists ${schema} cascade`);
  await client.end();
  const { Redis } = await import('ioredis');
  const redis = new Redis(REDIS_URL);
  for (const prefix of ['bench-']) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  }
  redis.disconnect();
}

/** A process's resident memory now and at its peak, in MB (Linux /proc). */
/**
 * The resident memory of a process once it has settled: V8 gives startup's memory back in steps over
 * about 35 s, so this reads every second until 15 readings in a row are within 2 MB, for at most 90 s.
 */
export async function settledRssMb(pid: number | undefined): Promise<number | undefined> {
  const readings: number[] = [];
  for (let second = 0; second < 90; second++) {
    const rss = memoryMb(pid)?.rssMb;
    if (rss === undefined) return undefined;
    readings.push(rss);
    const last = readings.slice(-15);
    if (last.length === 15 && Math.max(...last) - Math.min(...last) <= 2) return rss;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  return readings.at(-1);
}

export function memoryMb(pid: number | undefined): { rssMb: number; peakRssMb: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) =>
      Math.round(Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)![1]) / 1024);
    return { rssMb: field('VmRSS'), peakRssMb: field('VmHWM') };
  } catch {
    return undefined;
  }
}
