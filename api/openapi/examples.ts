/** A JSON Schema as the OpenAPI document holds it, for the parts an example is made from. */
type Schema = {
  $ref?: string;
  type?: string | string[];
  format?: string;
  examples?: unknown[];
  const?: unknown;
  enum?: unknown[];
  default?: unknown;
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minItems?: number;
  minimum?: number;
  minLength?: number;
  readOnly?: boolean;
};

/** Nesting past which an example holds only required fields, and past which it stops. */
const OPTIONAL_FIELDS_DEPTH = 2;
const MAX_DEPTH = 8;

const STRING_FORMATS: Record<string, string> = {
  'date-time': '2026-01-31T09:30:00.000Z',
  date: '2026-01-31',
  uri: 'https://erp.example.com/orders',
  url: 'https://erp.example.com/orders',
  email: 'ops@example.com',
  uuid: '019a0000-0000-7000-8000-000000000001',
};

/**
 * An example of a value of `schema`: its own first example when it has one, else one made from its type,
 * constant, enum, default, format and fields (optional fields near the top only). A schema whose values
 * have a pattern or another rule an example cannot guess carries its own `examples`.
 */
export function exampleOf(schema: Schema, resolve: (ref: string) => Schema, depth = 0): unknown {
  if (schema.examples && schema.examples.length > 0) return schema.examples[0];
  if (schema.$ref) return exampleOf(resolve(schema.$ref), resolve, depth);
  if ('const' in schema) return schema.const;
  if (schema.enum) return schema.enum.find((value) => value !== null) ?? null;
  if (schema.default !== undefined) return schema.default;
  const alternative = schema.oneOf?.[0] ?? schema.anyOf?.[0];
  if (alternative && !schema.properties) return exampleOf(alternative, resolve, depth);
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((part) => exampleOf(part, resolve, depth) as object));
  const type = Array.isArray(schema.type) ? schema.type.find((name) => name !== 'null') : schema.type;
  if (type === 'array' || schema.items) {
    const item = depth < MAX_DEPTH ? exampleOf(schema.items ?? {}, resolve, depth + 1) : null;
    return Array.from({ length: Math.max(schema.minItems ?? 1, 1) }, () => item);
  }
  if (type === 'object' || schema.properties) return objectExample(schema, resolve, depth);
  if (type === 'string') return STRING_FORMATS[schema.format ?? ''] ?? 'text'.padEnd(schema.minLength ?? 0, 'x');
  if (type === 'integer' || type === 'number') return schema.minimum ?? 1;
  if (type === 'boolean') return true;
  if (type === 'null') return null;
  return {};
}

function objectExample(schema: Schema, resolve: (ref: string) => Schema, depth: number): Record<string, unknown> {
  const required = new Set(schema.required ?? []);
  const example: Record<string, unknown> = {};
  if (depth >= MAX_DEPTH) return example;
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    if (field.readOnly || (!required.has(name) && depth >= OPTIONAL_FIELDS_DEPTH)) continue;
    example[name] = exampleOf(field, resolve, depth + 1);
  }
  const alternative = schema.oneOf?.[0] ?? schema.anyOf?.[0];
  const chosen = alternative ? exampleOf(alternative, resolve, depth) : undefined;
  return chosen !== null && typeof chosen === 'object' ? { ...example, ...chosen } : example;
}
