import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

// The failover drills of `npm run drill` (test/drills/failover.ts) as part of the suite, with a smaller load:
// two API hosts and two worker hosts (network namespaces where this machine allows them), PostgreSQL and a
// Redis Cluster; a Redis master, a whole shard, a worker host (killed, then cut off) and an API host fail in turn.
const DELIVERIES = 80;

interface DrillResult {
  drill: string;
  accepted: number;
  delivered: number;
  resentOtherKey: number;
  lost: number;
}

describe('failover drills', () => {
  it('each failure loses no accepted message and sends no side effect twice with different keys', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/drills/failover.ts'], {
      env: { ...process.env, DRILL_DELIVERIES: String(DELIVERIES) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise((resolve) => child.once('exit', resolve));
    console.log(output.slice(Math.max(0, output.indexOf('hosts:'))));

    const results = output
      .split('\n')
      .filter((line) => line.startsWith('{"drill"'))
      .map((line) => JSON.parse(line) as DrillResult);
    expect(results.map((result) => result.drill)).toHaveLength(6);
    for (const result of results) {
      expect(result, result.drill).toMatchObject({
        accepted: DELIVERIES,
        delivered: DELIVERIES,
        resentOtherKey: 0,
        lost: 0,
      });
    }
    expect(code, output).toBe(0);
  }, 900_000);
});
