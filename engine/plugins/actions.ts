import { LRUCache } from 'lru-cache';
import { permanent, ValidationError, type FieldError, SchemaValidator } from '../model/index.ts';
import {
  describeSyntaxError,
  Expression,
  TENANT,
  type ExpressionSandbox,
  unknownFunction,
} from '../expressions/index.ts';
import type { ActionStore, TenantAction } from '../store/index.ts';

/** A node runs a tenant's action with `"operation": "action:<name>"`. */
export const ACTION_PREFIX = 'action:';
export const ACTION_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;

/** The config of an action node: the action's input, and optionally the version to run (else the latest). */
export const actionNodeConfigSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    input: { description: "The action's input (usually a {{ }} expression); validated against its input schema." },
    version: { type: 'integer', minimum: 1, description: 'The version to run; the latest when absent.' },
  },
} as const;

export interface CompiledAction {
  expression: Expression;
  input: SchemaValidator<unknown>;
  output: SchemaValidator<unknown>;
}

/**
 * Compiles an action: its JSONata expression and its input and output JSON Schemas. Faults name the
 * field (`$.body.expression`, `$.body.inputSchema`...). Schemas may not carry `$id` (they share one
 * validator instance across tenants).
 */
export function compileAction(
  action: Pick<TenantAction, 'name' | 'expression' | 'inputSchema' | 'outputSchema'>,
  sandbox: ExpressionSandbox,
  prefix = '$',
): CompiledAction {
  const errors: FieldError[] = [];
  let expression: Expression | undefined;
  try {
    expression = new Expression(action.expression, sandbox);
    // Refused when saved, not failed at each run: an action has JSONata's functions alone.
    for (const name of expression.syntaxReads.unknownFunctions)
      errors.push({ path: `${prefix}.expression`, message: unknownFunction(name) });
  } catch (error) {
    errors.push({ path: `${prefix}.expression`, message: `does not compile: ${describeSyntaxError(error)}` });
  }
  const schema = (field: 'inputSchema' | 'outputSchema') => {
    const value = action[field];
    if (JSON.stringify(value).includes('"$id"')) {
      errors.push({ path: `${prefix}.${field}`, message: 'may not use $id' });
      return undefined;
    }
    try {
      return new SchemaValidator<unknown>(value, `${action.name} ${field === 'inputSchema' ? 'input' : 'output'}`, {
        tenant: true,
      });
    } catch (error) {
      errors.push({ path: `${prefix}.${field}`, message: `is not a valid JSON Schema: ${(error as Error).message}` });
      return undefined;
    }
  };
  const input = schema('inputSchema');
  const output = schema('outputSchema');
  if (errors.length > 0 || !expression || !input || !output)
    throw new ValidationError('The action is not valid', errors);
  return { expression, input, output };
}

/**
 * Runs tenants' actions: each version compiled once and kept, least recently used out. The version run is read from
 * the store each time (the latest, or the one pinned): an action deleted and saved again under its name is a new
 * one, whatever this process compiled before.
 */
export class ActionRunner {
  private readonly compiled: LRUCache<string, CompiledAction>;

  constructor(
    private readonly store: ActionStore,
    private readonly sandbox: ExpressionSandbox,
    capacity = 1000,
  ) {
    this.compiled = new LRUCache({ max: capacity });
  }

  async run(
    tenantId: string,
    name: string,
    version: number | undefined,
    input: unknown,
    path: string,
  ): Promise<unknown> {
    const saved = await this.store.getAction(tenantId, name, version);
    if (!saved)
      throw permanent(
        version === undefined ? `there is no action ${name}` : `action ${name} has no version ${version}`,
      );
    const action = this.compiledOf(tenantId, saved);
    action.input.validate(input, `${path}.input`);
    const output = await action.expression.evaluate({ input, [TENANT]: tenantId });
    // An output JSON cannot carry (undefined) is null, as in a node's output.
    const result = output === undefined ? null : output;
    action.output.validate(result, `action ${name} v${saved.version} output`);
    return result;
  }

  /** A saved version is known by its name, number and time of saving: a name saved again is a new action. */
  private compiledOf(tenantId: string, action: TenantAction): CompiledAction {
    const key = `${tenantId}\0${action.name}\0${action.version}\0${action.createdAt}`;
    let compiled = this.compiled.get(key);
    if (!compiled) {
      compiled = compileAction(action, this.sandbox);
      this.compiled.set(key, compiled);
    }
    return compiled;
  }
}
