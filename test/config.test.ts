import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  loadConfig,
  outboundRefusal,
  placedTenants,
  settings,
  withSettingsTable,
  workerConcurrency,
} from '../bin/config/config.ts';
import { RedisTarget } from '../bin/redis.ts';

describe('configuration', () => {
  it('takes defaults, coerces numbers and sizes, and treats blank as unset', () => {
    const defaults = loadConfig({});
    expect(defaults).toMatchObject({
      port: 3000,
      bodyLimitBytes: 1024 * 1024,
      logLevel: 'info',
      dataDir: path.resolve('data'),
    });
    expect(defaults.publicUrl).toBeUndefined();
    const set = loadConfig({ PORT: '8080', BODY_LIMIT: '512kb', MAX_STEP_OUTPUT_BYTES: '2MB', DATABASE_URL: '  ' });
    expect(set).toMatchObject({ port: 8080, bodyLimitBytes: 512 * 1024, maxStepOutputBytes: 2 * 1024 * 1024 });
    expect(set.databaseUrl).toBeUndefined();
  });

  it('takes more runs in flight in a worker process of its own than in one that serves the API, unless told', () => {
    expect(workerConcurrency(loadConfig({}), false)).toBe(128);
    expect(workerConcurrency(loadConfig({}), true)).toBe(64);
    expect(workerConcurrency(loadConfig({ WORKER_CONCURRENCY: '10' }), false)).toBe(10);
    expect(workerConcurrency(loadConfig({ WORKER_CONCURRENCY: '10' }), true)).toBe(10);
  });

  it('refuses a bad value with its variable and what it must be', () => {
    expect(() => loadConfig({ WORKER_CONCURRENCY: '0' })).toThrow('WORKER_CONCURRENCY must be >= 1, got "0"');
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow('PORT must be integer, got "eighty"');
    expect(() => loadConfig({ LOG_LEVEL: 'loud' })).toThrow('LOG_LEVEL must be one of "trace", "debug", "info"');
    expect(() => loadConfig({ BODY_LIMIT: '1gb' })).toThrow(
      'BODY_LIMIT must be a size such as 1048576, 512kb or 1mb, got "1gb"',
    );
    expect(() => loadConfig({ PUBLIC_URL: 'tributary.example.com' })).toThrow('PUBLIC_URL must match pattern');
    // A brace would make a hash tag of its own: every key in one cluster slot.
    expect(() => loadConfig({ REDIS_PREFIX: '{acme}' })).toThrow('REDIS_PREFIX must match pattern');
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'a:7000, b:7001' })).toThrow('REDIS_CLUSTER_NODES must match');
    expect(() => loadConfig({ RUN_GROUPS: '0' })).toThrow('RUN_GROUPS must be >= 1, got "0"');
    expect(() => loadConfig({ RUN_GROUP_TENANTS: 'acme' })).toThrow('RUN_GROUP_TENANTS must match pattern');
  });

  it('places the tenants RUN_GROUP_TENANTS names, environments too', () => {
    expect(placedTenants(loadConfig({}))).toEqual({});
    const config = loadConfig({ RUN_GROUPS: '3', RUN_GROUP_TENANTS: ' big-shop=2,acme = 1, acme~staging=0 ' });
    expect(placedTenants(config)).toEqual({ 'big-shop': 2, acme: 1, 'acme~staging': 0 });
  });

  it('takes Redis Cluster seed nodes as host:port or URLs, one set of credentials, never printed', () => {
    const target = new RedisTarget('redis://unused:6379', 'rediss://:s3cret@10.0.0.1:7000,10.0.0.2:7001');
    expect(target.isCluster).toBe(true);
    expect(target.printable).toBe('cluster 10.0.0.1:7000,10.0.0.2:7001');
    expect(() => new RedisTarget('', 'redis://:a@h1:7000,redis://:b@h2:7000')).toThrow(
      'every node must have the same scheme, user and password',
    );
    expect(() => new RedisTarget('', 'h1:7000,redis://h2:7000/3')).toThrow(
      'REDIS_CLUSTER_NODES: "redis://h2:7000/3" is not host:port or a redis:// URL without a database',
    );
    expect(new RedisTarget('redis://:pw@127.0.0.1:6379/2').printable).toBe('redis://:***@127.0.0.1:6379/2');
  });

  it('refuses non-public outbound addresses on PostgreSQL unless told otherwise, less the allowed ranges', () => {
    const shared = { DATABASE_URL: 'postgres://db/tributary' };
    expect(outboundRefusal(loadConfig({}))).toBeUndefined();
    expect(outboundRefusal(loadConfig({ ...shared, OUTBOUND_PRIVATE_ADDRESSES: 'allow' }))).toBeUndefined();
    const refused = outboundRefusal(loadConfig(shared))!;
    expect(
      ['10.8.1.2', '169.254.169.254', '::1', '2002:a00:1::1', '2001:0:4136:e378::1', '93.184.215.14'].map(refused),
    ).toEqual([
      'a private address',
      'a link-local address',
      'a loopback address',
      'an IPv4 address tunnelled in IPv6 (6to4)',
      'an IPv4 address tunnelled in IPv6 (Teredo)',
      undefined,
    ]);
    const onPremises = outboundRefusal(
      loadConfig({ OUTBOUND_PRIVATE_ADDRESSES: 'refuse', OUTBOUND_ALLOWED_NETWORKS: '10.8.0.0/16, fd12::/16' }),
    )!;
    expect(['10.8.1.2', '::ffff:10.8.1.2', 'fd12::5', '10.9.0.1', '169.254.169.254'].map(onPremises)).toEqual([
      undefined,
      undefined,
      undefined,
      'a private address',
      'a link-local address',
    ]);
    for (const range of ['10.8.0.0/33', '10.8.0.0', 'erp.local/8', '10.8.0.0/16/1', ''])
      expect(() =>
        outboundRefusal(loadConfig({ ...shared, OUTBOUND_ALLOWED_NETWORKS: `${range},10.0.0.0/8` })),
      ).toThrow(`OUTBOUND_ALLOWED_NETWORKS: "${range}" is not an address range such as 10.8.0.0/16`);
  });

  it('is documented by the table generated from the same schemas', () => {
    const document = readFileSync(path.resolve(import.meta.dirname, '../docs/configuration.md'), 'utf8');
    expect(withSettingsTable(document), 'run npm run docs:config').toBe(document);
    const variables = Object.values(settings).map((setting) => setting.env);
    expect(new Set(variables).size).toBe(variables.length);
  });
});
