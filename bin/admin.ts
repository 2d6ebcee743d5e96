import { chmodSync, rmSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createClientCredentials, type ClientCredentials } from '../api/auth/index.ts';
import { ConflictError, NotFoundError } from '../engine/model/index.ts';
import type { Store, Tenant } from '../engine/store/index.ts';

/** A client as the CLI lists it: never its secret (only a hash is kept). */
export interface ClientListing {
  client_id: string;
  tenant: string | null;
  scopes: string[];
  operator: boolean;
  /** The environments it acts in, when it is limited to some. */
  environments?: string[];
  createdAt: string;
}

/** The administrative commands of the CLI, over the store; each takes one request object. */
export interface AdminCommands {
  createTenant(request: { id: string; name?: string }): Promise<Tenant>;
  listTenants(request: { status?: Tenant['status'] }): Promise<Tenant[]>;
  createClient(request: {
    tenantId?: string;
    scopes?: string[];
    operator?: boolean;
    environments?: string[];
  }): Promise<ClientCredentials>;
  listClients(request: { tenantId?: string }): Promise<ClientListing[]>;
  revokeClient(request: { clientId: string }): Promise<{ client_id: string; revoked: true }>;
}

const ADMIN_COMMANDS = ['createTenant', 'listTenants', 'createClient', 'listClients', 'revokeClient'] as const;
type AdminCommand = (typeof ADMIN_COMMANDS)[number];
const isAdminCommand = (name: string): name is AdminCommand => (ADMIN_COMMANDS as readonly string[]).includes(name);

const TENANT_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** Tenants read a page at a time. */
const TENANT_PAGE = 200;

export function storeAdmin(store: Store): AdminCommands {
  return {
    createTenant: async ({ id, name }) => {
      if (!TENANT_ID.test(id))
        throw new Error('a tenant id is 1-63 lower-case letters, digits or -, starting with a letter or digit');
      return store.createTenant({ id, name: name ?? id });
    },
    listTenants: async ({ status }) => {
      const tenants: Tenant[] = [];
      for (let after: string | null = null, more = true; more; ) {
        const page = await store.listTenants({ status }, { first: TENANT_PAGE, after: after ?? undefined });
        tenants.push(...page.nodes);
        ({ hasNextPage: more, endCursor: after } = page.pageInfo);
      }
      return tenants;
    },
    createClient: (request) => createClientCredentials(store, request),
    listClients: async ({ tenantId }) =>
      (await store.listClients({ tenantId })).map((client) => ({
        client_id: client.clientId,
        tenant: client.tenantId,
        scopes: client.scopes,
        operator: client.operator,
        ...(client.environments ? { environments: client.environments } : {}),
        createdAt: client.createdAt,
      })),
    revokeClient: async ({ clientId }) => {
      if (!(await store.deleteClient(clientId))) throw new NotFoundError(`no client ${clientId}`);
      return { client_id: clientId, revoked: true };
    },
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
      const command = req.url?.slice(1) ?? '';
      if (!isAdminCommand(command)) throw new NotFoundError(`unknown command ${command}`);
      const request = JSON.parse(Buffer.concat(chunks).toString() || '{}');
      const result = await (admin[command] as (request: unknown) => Promise<unknown>)(request);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
    } catch (error) {
      const status = error instanceof ConflictError ? 409 : error instanceof NotFoundError ? 404 : 400;
      res
        .writeHead(status, { 'content-type': 'application/json' })
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
  return Object.fromEntries(
    ADMIN_COMMANDS.map((command) => [command, (request: unknown) => call(`/${command}`, request)]),
  ) as unknown as AdminCommands;
}
