import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { LRUCache } from 'lru-cache';
import { RE2JS } from 're2js';
import { ValidationError, type FieldError } from './errors.ts';
import { unstorableStrings } from './json-text.ts';

// ajv-formats is published as CommonJS; under NodeNext its default export is the module object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** One ajv instance per process: schemas are compiled once. */
export const ajv = addFormats(
  new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, useDefaults: true, coerceTypes: false }),
);
/** For query strings and path parameters, which arrive as text: `?first=10` becomes a number. */
const coercingAjv = addFormats(
  new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, useDefaults: true, coerceTypes: true }),
);
/**
 * Tenants' schemas: their `pattern`s run on RE2 (linear time), so a pattern such as `^(a+)+$` cannot
 * hold the process on a crafted string. Patterns RE2 lacks (lookaround, backreferences) are refused.
 */
const linearRegExp = Object.assign(
  (pattern: string) => {
    const compiled = RE2JS.compile(pattern);
    return { test: (text: string) => compiled.test(text) };
  },
  { code: 'linearRegExp' },
);
const newTenantAjv = () =>
  addFormats(
    new Ajv({
      allErrors: true,
      strict: true,
      allowUnionTypes: true,
      useDefaults: true,
      coerceTypes: false,
      code: { regExp: linearRegExp },
    }),
  );

/** Most distinct tenant schemas kept compiled in one process. */
export const TENANT_SCHEMAS_CACHED = 1000;

/**
 * Schemas compiled on one ajv instance before the next is made. An instance keeps what every schema
 * compiled on it needs (their patterns, their functions) for as long as any of them is used, so
 * tenant schemas go on small instances, each dropped once none of its schemas is cached: at most
 * this many times TENANT_SCHEMAS_CACHED are ever held, and about TENANT_SCHEMAS_CACHED usually.
 * Making an instance costs ~9 ms, spread over this many compilations.
 */
const SCHEMAS_PER_INSTANCE = 16;

/**
 * Tenants' schemas, compiled once per distinct content and kept while among the most recently used:
 * one instance compiling whatever tenants send would keep every schema forever (a thousand saves of
 * one action, a thousand copies).
 */
const tenantCompiled = new LRUCache<string, ValidateFunction>({ max: TENANT_SCHEMAS_CACHED });
let tenantAjv = newTenantAjv();
let compiledOnInstance = 0;

function compileTenantSchema(schema: object): ValidateFunction {
  const key = JSON.stringify(schema);
  let compiled = tenantCompiled.get(key);
  if (!compiled) {
    if (compiledOnInstance++ >= SCHEMAS_PER_INSTANCE) {
      tenantAjv = newTenantAjv();
      compiledOnInstance = 1;
    }
    try {
      compiled = tenantAjv.compile(schema);
    } finally {
      tenantAjv.removeSchema(schema);
    }
    tenantCompiled.set(key, compiled);
  }
  return compiled;
}

/** Convert ajv's pointer-style paths into JSON paths (`$.nodes[1].config.url`). */
export function jsonPath(instancePath: string, extra?: string): string {
  let path = '$';
  const segments = instancePath === '' ? [] : instancePath.slice(1).split('/');
  if (extra !== undefined) segments.push(extra);
  for (const raw of segments) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    path += /^\d+$/.test(segment)
      ? `[${segment}]`
      : /^[A-Za-z_$][\w$]*$/.test(segment)
        ? `.${segment}`
        : `[${JSON.stringify(segment)}]`;
  }
  return path;
}

export function fieldErrors(errors: ErrorObject[] | null | undefined, prefix = '$'): FieldError[] {
  // A bad property name is reported once, at the property (ajv adds a second error for the object).
  return (errors ?? [])
    .filter((error) => error.keyword !== 'propertyNames')
    .map((error) => {
      const extra =
        error.keyword === 'required'
          ? String(error.params.missingProperty)
          : error.keyword === 'additionalProperties'
            ? String(error.params.additionalProperty)
            : error.propertyName;
      const path = jsonPath(error.instancePath, extra);
      const message =
        error.propertyName !== undefined
          ? 'is a name not allowed here'
          : error.keyword === 'additionalProperties'
            ? 'is not a known field'
            : error.keyword === 'enum'
              ? `must be one of ` +
                `${(error.params.allowedValues as unknown[]).map((value) => JSON.stringify(value)).join(', ')}`
              : (error.message ?? 'is invalid');
      return { path: prefix + path.slice(1), message };
    });
}

/** The integers the store keeps (PostgreSQL `integer`). */
const STORE_INTEGER = { minimum: -2_147_483_648, maximum: 2_147_483_647 } as const;

/** The schema with every integer bounded to what the store keeps, where it sets no tighter bound. */
function withStoreBounds(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withStoreBounds);
  if (schema === null || typeof schema !== 'object') return schema;
  const bounded: Record<string, unknown> = Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [
      key,
      key === 'default' || key === 'examples' || key === 'enum' || key === 'const' ? value : withStoreBounds(value),
    ]),
  );
  const type = bounded.type;
  if (type === 'integer' || (Array.isArray(type) && type.includes('integer'))) {
    bounded.minimum ??= STORE_INTEGER.minimum;
    bounded.maximum ??= STORE_INTEGER.maximum;
  }
  return bounded;
}

export interface ValidatorOptions {
  /** Text (query strings, path parameters): `?first=10` becomes a number. */
  coerce?: boolean;
  /**
   * What the caller sends to be kept or looked up (request params, queries and bodies): strings
   * without NUL or lone surrogates, integers within the store's. The one place such input is checked.
   */
  storable?: boolean;
  /** A schema a tenant wrote: its patterns run in linear time. */
  tenant?: boolean;
}

/** A compiled schema that either returns the typed value or throws a ValidationError listing every bad field. */
export class SchemaValidator<T> {
  private readonly validateFn: ValidateFunction;
  readonly schema: object;
  private readonly storable: boolean;

  constructor(
    schema: object,
    private readonly what: string,
    options: ValidatorOptions = {},
  ) {
    this.storable = options.storable ?? false;
    this.schema = this.storable ? (withStoreBounds(schema) as object) : schema;
    this.validateFn = options.tenant
      ? compileTenantSchema(this.schema)
      : (options.coerce ? coercingAjv : ajv).compile(this.schema);
  }

  validate(value: unknown, prefix = '$'): T {
    const unstorable = this.storable ? unstorableStrings(value, prefix) : [];
    if (unstorable.length === 0 && this.validateFn(value)) return value as T;
    throw new ValidationError(
      `Invalid ${this.what}`,
      unstorable.length > 0 ? unstorable : fieldErrors(this.validateFn.errors, prefix),
    );
  }

  errors(value: unknown, prefix = '$'): FieldError[] {
    return fieldErrors(this.rawErrors(value), prefix);
  }

  rawErrors(value: unknown): ErrorObject[] {
    return this.validateFn(value) ? [] : [...(this.validateFn.errors ?? [])];
  }
}
