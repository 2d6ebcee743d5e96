import { type FieldError, suggestion } from '../model/index.ts';
import type { VariableRead } from './graph-compiler.ts';

type ValueKind = VariableRead['kind'];
export type NamesByKind = Record<Exclude<ValueKind, 'steps'>, ReadonlySet<string>>;

/**
 * The named values a flow reads that do not exist now: warnings, not refusals (they may be set before
 * the flow runs), each at the field that reads it, with the name meant when one is close.
 */
export function missingValueWarnings(reads: VariableRead[], present: NamesByKind, known: NamesByKind): FieldError[] {
  const warnings: FieldError[] = [];
  const seen = new Set<string>();
  for (const read of reads) {
    if (read.kind === 'steps' || present[read.kind].has(read.name)) continue;
    const id = `${read.path}\0${read.kind}\0${read.name}`;
    if (seen.has(id)) continue;
    seen.add(id);
    const message = `reads $${read.kind}.${read.name}, which is not set${suggestion(read.name, known[read.kind], `$${read.kind}.`)}`;
    warnings.push(
      read.node === undefined ? { path: read.path, message } : { path: read.path, message, node: read.node },
    );
  }
  return warnings;
}
