import { terminalRunStatuses, type RunStatus, type Step, type TerminalRunStatus } from '../../model/index.ts';

/** The kinds of state a tenant keeps, counted and limited (flows' bytes include their published versions). */
export const STATE_KINDS = [
  'flows',
  'variables',
  'secrets',
  'action versions',
  'destinations',
  'data spaces',
  'documents',
] as const;

export type StateKind = (typeof STATE_KINDS)[number];

/** A limit on one kind of state, with the settings that set it (named in the refusal). Null: none. */
export interface StateLimit {
  kind: StateKind;
  maxItems: number | null;
  itemsSetting: string | null;
  maxBytes: number | null;
  bytesSetting: string | null;
}

/**
 * How many items of a kind a tenant keeps and their size (as JSON text, rows' other fields included),
 * against the deployment's limits (null: none).
 */
export interface StateUsage {
  items: number;
  bytes: number;
  maxItems: number | null;
  maxBytes: number | null;
}

export interface PageRequest {
  first: number;
  after?: string;
}

/** A connection (docs/glossary.md): `{nodes, pageInfo: {hasNextPage, endCursor}}`. */
export interface Page<T> {
  nodes: T[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

/** Every item of a paged list, page by page. */
export async function* pages<T>(list: (after?: string) => Promise<Page<T>>): AsyncGenerator<T> {
  let after: string | undefined;
  do {
    const page = await list(after);
    yield* page.nodes;
    after = page.pageInfo.hasNextPage ? (page.pageInfo.endCursor ?? undefined) : undefined;
  } while (after);
}

export const isTerminal = (status: RunStatus): status is TerminalRunStatus =>
  (terminalRunStatuses as readonly string[]).includes(status);

/**
 * A run's result: the output of the last of its flow's nodes it ran (not a sub-step, not a loop
 * item's node), or null. What a call node gets from the run it called.
 */
export function runResult(steps: readonly Step[]): unknown {
  let last: Step | undefined;
  for (const step of steps) {
    if (step.status !== 'succeeded' || /[/[]/.test(step.key)) continue;
    if (!last || (step.finishedAt ?? '') >= (last.finishedAt ?? '')) last = step;
  }
  return last?.output ?? null;
}
