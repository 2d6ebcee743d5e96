import type { Environment } from '../engine/model/index.ts';
import { tenantApi, type TenantApiOptions } from './tenant-api.ts';

type Options = TenantApiOptions & { print: (line: string) => void };

/** `tributary environment list`: one line per environment, production first. */
export async function listEnvironments(options: Options): Promise<void> {
  const api = await tenantApi(options);
  const { nodes } = (await api('GET', '/api/v1/environments')) as { nodes: Environment[] };
  for (const { name, createdAt } of nodes) options.print(`${name.padEnd(33)} created ${createdAt}`);
}

/** `tributary environment create|delete <name>`. */
export async function changeEnvironment(options: Options, change: 'create' | 'delete', name: string): Promise<void> {
  const api = await tenantApi(options);
  if (change === 'create') await api('POST', '/api/v1/environments', { name });
  else await api('DELETE', `/api/v1/environments/${encodeURIComponent(name)}`);
  options.print(`${change === 'create' ? 'created' : 'deleted'} ${name} of ${options.tenant}`);
}
