import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FlowFile, PushResult } from '../engine/services/index.ts';
import { clientToken } from './api-token.ts';
import { FLOW_FILE_SUFFIX } from '../engine/services/index.ts';

/** Where `flows pull` writes what each flow uses, by flow key (names only). */
export const USES_FILE = 'uses.json';

export interface FlowsCliOptions {
  /** The API's base URL, e.g. http://localhost:3000. */
  url: string;
  tenant: string;
  dir: string;
  clientId: string;
  clientSecret: string;
  publish?: boolean;
  dryRun?: boolean;
  /** Where the lines a person reads go. */
  print: (line: string) => void;
}

/** A command's end: its exit code (0 done, 1 refused: what to fix was printed). */
type ExitCode = 0 | 1;

/**
 * `tributary flows pull`: every flow of the tenant as `<key>.flow.json` in `dir` (its draft, keys sorted, two spaces),
 * and `uses.json` with the names of the variables, secrets and destinations each uses.
 */
export async function pullFlows(options: FlowsCliOptions): Promise<ExitCode> {
  const api = await tenantApi(options);
  const { files } = (await api('GET', '/api/v1/flow-files')) as { files: FlowFile[] };
  await mkdir(options.dir, { recursive: true });
  for (const file of files) await writeFile(path.join(options.dir, file.name), formatted(file.document));
  const uses = Object.fromEntries(files.map((file) => [file.document.key, file.uses]));
  await writeFile(path.join(options.dir, USES_FILE), formatted(uses));
  options.print(`pulled ${files.length} flow${files.length === 1 ? '' : 's'} of ${options.tenant} into ${options.dir}`);
  // A file of a flow the tenant no longer has is not deleted (it may be work not pushed yet): said, left to the person.
  const pulled = new Set(files.map((file) => file.name));
  for (const name of await readdir(options.dir))
    if (name.endsWith(FLOW_FILE_SUFFIX) && !pulled.has(name))
      options.print(`not a flow of ${options.tenant}: ${name} (left as it is)`);
  return 0;
}

/**
 * `tributary flows push`: makes the tenant's drafts match the `*.flow.json` files of `dir` (and publishes them with
 * `publish`), printing what changes per flow. A file that is not JSON, or that publishing would refuse, is named with
 * the path of each problem, and nothing changes.
 */
export async function pushFlows(options: FlowsCliOptions): Promise<ExitCode> {
  const names = (await readdir(options.dir)).filter((name) => name.endsWith(FLOW_FILE_SUFFIX)).sort();
  const files: Array<{ name: string; document: unknown }> = [];
  const unreadable: string[] = [];
  for (const name of names) {
    const text = await readFile(path.join(options.dir, name), 'utf8');
    try {
      files.push({ name, document: JSON.parse(text) });
    } catch (error) {
      unreadable.push(`${name}: not JSON: ${(error as Error).message}`);
    }
  }
  if (unreadable.length > 0) return refused(options, unreadable);
  const api = await tenantApi(options);
  const answer = await api('POST', '/api/v1/flow-files/push', {
    files,
    publish: options.publish === true,
    dryRun: options.dryRun === true,
  });
  if ('errors' in answer) {
    const problems = (answer.errors as Array<{ path: string; message: string }>).map(({ path: at, message }) => {
      // $.body.files[2].document.nodes[0] -> orders.flow.json: $.nodes[0]
      const match = /^\$\.body\.files\[(\d+)\](?:\.document)?(.*)$/.exec(at);
      return match ? `${files[Number(match[1])].name}: $${match[2]}: ${message}` : `${at}: ${message}`;
    });
    return refused(options, problems);
  }
  const { changes, warnings, dryRun } = answer as unknown as PushResult;
  for (const { file, change, diff, published } of changes) {
    options.print(`${change.padEnd(9)} ${file}${published ? ` (published: version ${published})` : ''}`);
    for (const line of diff) options.print(`    ${line}`);
  }
  for (const warning of warnings) options.print(`warning: ${warning.path}: ${warning.message}`);
  const count = (kind: string) => changes.filter(({ change }) => change === kind).length;
  options.print(
    `${dryRun ? 'would push' : 'pushed'}: ${count('added')} added, ${count('changed')} changed, ` +
      `${count('unchanged')} unchanged${dryRun ? ' (dry run: nothing changed)' : ''}`,
  );
  return 0;
}

function refused(options: FlowsCliOptions, problems: string[]): ExitCode {
  for (const problem of problems) options.print(problem);
  options.print(`refused: ${problems.length} problem${problems.length === 1 ? '' : 's'}; nothing was changed`);
  return 1;
}

/** JSON as the files hold it: two spaces, a newline at the end. */
const formatted = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/**
 * Calls the tenant's API with a token from its client credentials: the answer's body, a problem's included (its
 * `errors` say what to fix); any other failure throws, saying what answered.
 */
async function tenantApi({ url, tenant, clientId, clientSecret }: FlowsCliOptions) {
  const accessToken = await clientToken(url, clientId, clientSecret);
  return async (method: string, route: string, body?: unknown): Promise<Record<string, unknown>> => {
    const answer = await fetch(`${url}${route}`, {
      method,
      headers: { authorization: `Bearer ${accessToken}`, tenant_id: tenant, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await answer.text();
    const parsed = text ? JSON.parse(text) : {};
    if (answer.ok || (answer.status === 400 && Array.isArray(parsed.errors))) return parsed;
    throw new Error(`${method} ${route} answered ${answer.status}: ${parsed.detail ?? text}`);
  };
}
