import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FlowFile, Promotion, PushResult } from '../engine/services/index.ts';
import { problemsOf, type TenantApi, tenantApi, type TenantApiOptions } from './tenant-api.ts';
import { FLOW_FILE_SUFFIX, MAX_PUSHED_FILES } from '../engine/services/index.ts';

/** Where `flows pull` writes what each flow uses, by flow key (names only). */
export const USES_FILE = 'uses.json';

export interface FlowsCliOptions extends TenantApiOptions {
  dir: string;
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
  options.print(`pulled ${files.length} flow${files.length === 1 ? '' : 's'} of ${where(options)} into ${options.dir}`);
  // A file of a flow the tenant no longer has is not deleted (it may be work not pushed yet): said, left to the person.
  const pulled = new Set(files.map((file) => file.name));
  for (const name of await readdir(options.dir))
    if (name.endsWith(FLOW_FILE_SUFFIX) && !pulled.has(name))
      options.print(`not a flow of ${where(options)}: ${name} (left as it is)`);
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
  const batches = inBatches(files);
  const publish = options.publish === true;
  // Every batch is checked before any is written: a push changes nothing unless every file is valid.
  const checked: PushResult[] = [];
  const problems: string[] = [];
  for (const batch of batches) {
    const answer = await api('POST', '/api/v1/flow-files/push', { files: batch, publish, dryRun: true });
    const refusal = problemsOf(answer);
    if (refusal) problems.push(...refusal.map((problem) => inFile(problem, batch)));
    else checked.push(answer as unknown as PushResult);
  }
  if (problems.length > 0) return refused(options, problems);
  const results: PushResult[] = options.dryRun ? checked : [];
  for (const [index, batch] of options.dryRun ? [] : batches.entries()) {
    const answer = await api('POST', '/api/v1/flow-files/push', { files: batch, publish, dryRun: false });
    const refusal = problemsOf(answer);
    if (!refusal) results.push(answer as unknown as PushResult);
    else {
      // Changed since it was checked (by someone else): what the earlier batches pushed stays.
      const done = batches.slice(0, index).flat().length;
      return refused(options, [
        ...refusal.map((problem) => inFile(problem, batch)),
        `pushed ${done} of ${files.length} files before this`,
      ]);
    }
  }
  const changes = results.flatMap((result) => result.changes);
  for (const { file, change, diff, published } of changes) {
    options.print(`${change.padEnd(9)} ${file}${published ? ` (published: version ${published})` : ''}`);
    for (const line of diff) options.print(`    ${line}`);
  }
  for (const [index, result] of results.entries())
    for (const warning of result.warnings) options.print(`warning: ${inFile(warning, batches[index])}`);
  const count = (kind: string) => changes.filter(({ change }) => change === kind).length;
  const { dryRun } = options;
  options.print(
    `${dryRun ? 'would push' : 'pushed'}: ${count('added')} added, ${count('changed')} changed, ` +
      `${count('unchanged')} unchanged${dryRun ? ' (dry run: nothing changed)' : ''}`,
  );
  return 0;
}

/** Files are pushed at most this many bytes of JSON at a time (well under the API's BODY_LIMIT of 1 MB by default). */
const BATCH_BYTES = 512 * 1024;

/** The files in pushes of at most MAX_PUSHED_FILES and BATCH_BYTES (a larger file goes alone). */
function inBatches<T>(files: T[]): T[][] {
  const batches: T[][] = [];
  let bytes = 0;
  for (const file of files) {
    const size = Buffer.byteLength(JSON.stringify(file));
    const last = batches.at(-1);
    if (last && last.length < MAX_PUSHED_FILES && bytes + size <= BATCH_BYTES) {
      last.push(file);
      bytes += size;
    } else {
      batches.push([file]);
      bytes = size;
    }
  }
  return batches;
}

/** A problem of a push as a person reads it: `$.body.files[2].document.nodes[0]` -> `orders.flow.json: $.nodes[0]`. */
function inFile({ path: at, message }: { path: string; message: string }, batch: Array<{ name: string }>): string {
  const match = /^\$(?:\.body)?\.files\[(\d+)\](?:\.document)?(.*)$/.exec(at);
  return match ? `${batch[Number(match[1])].name}: $${match[2]}: ${message}` : `${at}: ${message}`;
}

/**
 * `tributary flows promote`: the flow with `key` in `from` (its active version unless `version`) made the running
 * version in `to`, printing what changes there; refused, naming each field, when `to` lacks what the version uses.
 */
export async function promoteFlow(
  options: Omit<FlowsCliOptions, 'dir' | 'env' | 'publish'> & {
    key: string;
    from: string;
    to: string;
    version?: number;
  },
): Promise<ExitCode> {
  const api = await tenantApi({ ...options, env: options.from });
  const id = await publishedFlowId(api, options.key);
  if (!id) return refused(options, [`${options.key}: no published flow of ${options.tenant} in ${options.from}`]);
  const answer = await api('POST', `/api/v1/flows/${id}/promote`, {
    to: options.to,
    dryRun: options.dryRun === true,
    ...(options.version ? { version: options.version } : {}),
  });
  const problems = problemsOf(answer);
  if (problems) {
    options.print(String(answer.detail));
    return refused(
      options,
      problems.map(({ path: at, message }) => `${options.key}: ${at}: ${message}`),
    );
  }
  const { from, to, dryRun } = answer as unknown as Promotion;
  const version = to.version === null ? 'a new version' : `version ${to.version}`;
  options.print(
    `${to.change.padEnd(9)} ${options.key}: ${from.environment} version ${from.version} -> ${to.environment}` +
      (to.change === 'unchanged' ? ` (runs it already: ${version})` : ` ${dryRun ? 'would run' : 'runs'} ${version}`),
  );
  for (const line of to.diff) options.print(`    ${line}`);
  if (dryRun) options.print('dry run: nothing changed');
  return 0;
}

/** The id of the published flow with `key`, looked for a page of flows at a time. */
async function publishedFlowId(api: TenantApi, key: string): Promise<string | undefined> {
  for (let after: string | null = null; ; ) {
    const page = (await api('GET', `/api/v1/flows?first=200${after ? `&after=${encodeURIComponent(after)}` : ''}`)) as {
      nodes: Array<{ id: string; key: string }>;
      pageInfo: { hasNextPage: boolean; endCursor: string | null };
    };
    const flow = page.nodes.find((node) => node.key === key);
    if (flow || !page.pageInfo.hasNextPage) return flow?.id;
    after = page.pageInfo.endCursor;
  }
}

/** The tenant, and its environment when not production, as the lines printed name them. */
const where = ({ tenant, env }: Pick<FlowsCliOptions, 'tenant' | 'env'>) =>
  env && env !== 'production' ? `${tenant} (${env})` : tenant;

function refused(options: Pick<FlowsCliOptions, 'print'>, problems: string[]): ExitCode {
  for (const problem of problems) options.print(problem);
  options.print(`refused: ${problems.length} problem${problems.length === 1 ? '' : 's'}; nothing was changed`);
  return 1;
}

/** JSON as the files hold it: two spaces, a newline at the end. */
const formatted = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
