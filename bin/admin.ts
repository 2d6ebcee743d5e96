import { chmodSync, rmSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createClientCredentials, type ClientCredentials } from '../api/auth/clients.ts';
import { ConflictError } from '../engine/model/index.ts';
import type { Store, Tenant } from '../engine/store/index.ts';

/** The administrative commands of the CLI, over the store. */
export interface AdminCommands {
  createTenant(request: { id: string; name?: string }): Promise<Tenant>;
  createClient(request: { tenantId?: string; scopes?: string[]; operator?: boolean }): Promise<ClientCredentials>;
}

const TENANT_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;

export function storeAdmin(store: Store): AdminCommands {
  return {
    createTenant: async ({ id, name }) => {
      if (!TENANT_ID.test(id))
        throw new Error('a tenant id is 1-63 lower-case letters, digits or -, starting with a letter or digit');
      return store.createTenant({ id, name: name ?? id });
    },
    createClient: (request) => createClientCredentials(store, request),
  };
}

/**
 * In the embedded mode only the serving process may open DATA_DIR, so the CLI reaches it through
 * this socket, which only the directory's owner can open (the same trust as the data itself).
 */
export const adminSocketPath = (dataDir: string) => path.join(dataDir, 'admin.sock');

export async function serveAdminSocket(admin: AdminCommands, dataDir: string): Promise<http.Server> {
  const socket = adminSocketPath(dataDir);
  rmSync(socket, { force: true });
  const server = http.createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const request = JSON.parse(Buffer.concat(chunks).toString() || '{}');
      const result =
        req.url === '/tenants'
          ? await admin.createTenant(request)
          : req.url === '/clients'
            ? await admin.createClient(request)
            : undefined;
      res
        .writeHead(result ? 200 : 404, { 'content-type': 'application/json' })
        .end(JSON.stringify(result ?? { error: 'unknown command' }));
    } catch (error) {
      res
        .writeHead(error instanceof ConflictError ? 409 : 400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: (error as Error).message }));
    }
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  chmodSync(socket, 0o600);
  return server;
}

export function socketAdmin(dataDir: string): AdminCommands {
  const call = <T>(route: string, body: unknown) =>
    new Promise<T>((resolve, reject) => {
      const req = http.request({ socketPath: adminSocketPath(dataDir), path: route, method: 'POST' }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const reply = JSON.parse(Buffer.concat(chunks).toString());
          if (res.statusCode === 200) resolve(reply as T);
          else reject(new Error(reply.error));
        });
      });
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
  return { createTenant: (request) => call('/tenants', request), createClient: (request) => call('/clients', request) };
}
