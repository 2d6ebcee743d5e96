import v8 from 'node:v8';
import vm from 'node:vm';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SchemaValidator } from '../engine/model/json-schema.ts';
import { startTestPlatform, type TestPlatform } from './support/harness.ts';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** The heap in use after a full collection, in bytes. */
function heapUsed(): number {
  gc();
  gc();
  return v8.getHeapStatistics().used_heap_size;
}

/** A tenant's schema, distinct for each n. */
const schema = (n: number) => ({
  type: 'object',
  required: [`field${n}`],
  properties: { [`field${n}`]: { type: 'string', pattern: `^x${n}-[a-z]+$`, maxLength: 100 + n } },
});

describe('in-process caches keyed by what callers send', () => {
  it('keeps at most 1,000 tenant schemas compiled, however many distinct ones are compiled', () => {
    const compile = (from: number, count: number) => {
      for (let n = from; n < from + count; n++) new SchemaValidator(schema(n), 'action input', { tenant: true });
    };
    compile(0, 2000);
    const before = heapUsed();
    compile(2000, 4000);
    const grown = heapUsed() - before;
    // Each compiled schema holds about 10 KB: 4,000 more kept would be ~40 MB.
    expect(grown).toBeLessThan(4 * 1024 * 1024);
  });
});

describe('flow URLs that name no flow', () => {
  let env: TestPlatform;
  beforeAll(async () => {
    env = await startTestPlatform('postgres', { api: true, worker: false }, { intakeCacheEntries: 500 });
  });
  afterAll(async () => {
    await env?.close();
  });

  /** `count` deliveries to random flow URLs (the longest keys a URL segment takes), 50 at a time. */
  async function sendUnknown(count: number) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
    const post = () =>
      new Promise<number>((resolve, reject) => {
        const n = Math.floor(Math.random() * 1e12);
        const key = `${n.toString(36)}${'k'.repeat(56)}`.slice(0, 63);
        const request = http.request(
          `${env.url}/hooks/t${n.toString(36)}/${key}`,
          { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
          (response) => {
            response.resume();
            response.on('end', () => resolve(response.statusCode!));
          },
        );
        request.on('error', reject);
        request.end('{}');
      });
    for (let sent = 0; sent < count; sent += 50) {
      const statuses = await Promise.all(Array.from({ length: 50 }, () => post()));
      expect(new Set(statuses)).toEqual(new Set([404]));
    }
    agent.destroy();
  }

  it('are remembered within INTAKE_CACHE_ENTRIES: ten thousand more leave the heap where it was', async () => {
    // The test's logger keeps every line it is given: those are let go before each measure.
    await sendUnknown(2000);
    env.lines.length = 0;
    const before = heapUsed();
    await sendUnknown(10_000);
    env.lines.length = 0;
    // Kept (as before this bound), each would hold ~440 bytes: ~4.4 MB.
    expect(heapUsed() - before).toBeLessThan(1.5 * 1024 * 1024);
  });
});
