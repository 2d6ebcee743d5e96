import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VERSION } from '../bin/platform.ts';
import { redisAnswers } from '../bin/redis.ts';
import { getToken, startTestPlatform, type TestPlatform } from './support/harness.ts';

const CLI = path.resolve('bin/tributary.js');

/** The CLI as a user runs it, from `cwd`, with only the environment given (no DATABASE_URL unless set). */
function cli(args: string[], env: Record<string, string> = {}, cwd = process.cwd()) {
  const { DATABASE_URL: _url, DATA_DIR: _dir, ...inherited } = process.env;
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: { ...inherited, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr })),
  );
}

/** A TCP port nothing listens on (as of now). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

describe('the tributary CLI', () => {
  let env: TestPlatform;
  beforeAll(async () => {
    env = await startTestPlatform('pglite');
  });
  afterAll(() => env?.close());

  it("prints its version, each command's help, and refuses unknown commands and options with the usage", async () => {
    expect(await cli(['--version'])).toMatchObject({ code: 0, stdout: `${VERSION}\n` });
    const help = await cli(['client', 'create', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: tributary client create');
    expect(help.stdout).toContain('flows:write');
    expect((await cli(['tenant', '--help'])).stdout).toContain('Usage: tributary tenant create <id>');
    // Each command's help shows all its forms; an unknown form or a missing value is a usage error.
    expect(await cli(['tenant', 'list', '--help'])).toMatchObject({
      code: 0,
      stdout: expect.stringContaining('tributary tenant list [--status active|suspended]'),
    });
    expect((await cli(['client', 'revoke', '--help'])).stdout).toContain('tributary client revoke <client id>');
    const unknownForm = await cli(['tenant', 'lsit', '--help']);
    expect(unknownForm.code).toBe(2);
    expect(unknownForm.stderr).toMatch(/unknown tenant command "lsit"\n\nUsage: tributary tenant create/);
    const noName = await cli(['tenant', 'create', 'beta', '--name']);
    expect(noName.code).toBe(2);
    expect(noName.stderr).toMatch(/--name <value>' argument missing\n\nUsage: tributary tenant create/);
    const unknown = await cli(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "frobnicate"');
    const badOption = await cli(['tenant', 'create', 'x', '--colour']);
    expect(badOption.code).toBe(2);
    expect(badOption.stderr).toContain('--colour');
  });

  it('says which port is taken when serve cannot listen, and leaves no redis-server it started behind', async () => {
    const port = new URL(env.url).port;
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tributary-cli-'));
    // Nothing answers at this REDIS_URL, so serve starts its own redis-server there before it fails.
    const redisUrl = `redis://127.0.0.1:${await freePort()}`;
    const taken = await cli(['serve'], { PORT: port, DATA_DIR: dataDir, REDIS_URL: redisUrl });
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain(
      `tributary: port ${port} is in use (another Tributary, or another server): stop it, or set PORT`,
    );
    expect(await redisAnswers(redisUrl)).toBe(false);
  });

  it('never creates a store: it says where it looked, and which DATA_DIR a running server uses', async () => {
    const elsewhere = mkdtempSync(path.join(os.tmpdir(), 'tributary-cli-'));
    const refused = await cli(['tenant', 'create', 'globex'], {}, elsewhere);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`no Tributary store at ${path.join(elsewhere, 'data')} (DATA_DIR`);
    expect(refused.stderr).toContain(`DATA_DIR=${env.config.dataDir}`);
    expect(existsSync(path.join(elsewhere, 'data'))).toBe(false);
  });

  it('creates tenants and clients through the running server, refusing mixed or unknown scopes', async () => {
    const at = { DATA_DIR: env.config.dataDir };
    const tenant = await cli(['tenant', 'create', 'globex'], at);
    expect(tenant).toMatchObject({ code: 0 });
    expect(JSON.parse(tenant.stdout)).toMatchObject({ id: 'globex' });
    const client = await cli(['client', 'create', '--tenant', 'globex', '--scope', 'runs:read'], at);
    expect(client.code).toBe(0);
    const credentials = JSON.parse(client.stdout);
    expect(credentials).toMatchObject({ tenant: 'globex', scopes: ['runs:read'] });
    expect(await getToken(env.url, credentials.client_id, credentials.client_secret)).toEqual(expect.any(String));

    const both = await cli(['client', 'create', '--tenant', 'globex', '--operator'], at);
    expect(both.code).toBe(1);
    expect(both.stderr).toContain('not both');
    const badScope = await cli(['client', 'create', '--tenant', 'globex', '--scope', 'flows:delete'], at);
    expect(badScope.code).toBe(1);
    expect(badScope.stderr).toContain('unknown scope(s) flows:delete; the scopes are flows:read, flows:write');
    const escalated = await cli(['client', 'create', '--tenant', 'globex', '--scope', 'platform:admin'], at);
    expect(escalated.code).toBe(1);
    expect(escalated.stderr).toContain('use --operator');
  });

  it('lists tenants and clients (never a secret), and revokes a client: no new token, and its tokens fail', async () => {
    const at = { DATA_DIR: env.config.dataDir };
    await cli(['tenant', 'create', 'initech', '--name', 'Initech'], at);
    const tenants = await cli(['tenant', 'list'], at);
    expect(tenants.code).toBe(0);
    expect(JSON.parse(tenants.stdout)).toContainEqual(expect.objectContaining({ id: 'initech', name: 'Initech' }));
    expect(JSON.parse((await cli(['tenant', 'list', '--status', 'suspended'], at)).stdout)).toEqual([]);

    const credentials = JSON.parse((await cli(['client', 'create', '--tenant', 'initech'], at)).stdout);
    const listed = await cli(['client', 'list', '--tenant', 'initech'], at);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      {
        client_id: credentials.client_id,
        tenant: 'initech',
        scopes: credentials.scopes,
        operator: false,
        createdAt: expect.any(String),
      },
    ]);
    expect(listed.stdout).not.toContain(credentials.client_secret);

    const token = await getToken(env.url, credentials.client_id, credentials.client_secret);
    const revoked = await cli(['client', 'revoke', credentials.client_id], at);
    expect(revoked).toMatchObject({ code: 0 });
    expect(JSON.parse(revoked.stdout)).toEqual({ client_id: credentials.client_id, revoked: true });
    expect(JSON.parse((await cli(['client', 'list', '--tenant', 'initech'], at)).stdout)).toEqual([]);
    await expect(getToken(env.url, credentials.client_id, credentials.client_secret)).rejects.toThrow();
    const refused = await fetch(`${env.url}/api/v1/runs`, {
      headers: { authorization: `Bearer ${token}`, tenant_id: 'initech' },
    });
    expect(refused.status).toBe(401);
    expect((await refused.json()).detail).toBe('the client of this token has been revoked');
    const again = await cli(['client', 'revoke', credentials.client_id], at);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`no client ${credentials.client_id}`);
  });
});
