import { escapeHtml as html } from './html.ts';

/** A JSON Schema as the reference shows it. */
export type Schema = Record<string, unknown> & {
  $ref?: string;
  type?: string | string[];
  format?: string;
  description?: string;
  title?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  oneOf?: Schema[];
  anyOf?: Schema[];
  additionalProperties?: boolean | Schema;
  examples?: unknown[];
};
/** How deep inline objects are unfolded into nested tables. */
const MAX_DEPTH = 4;
/** Annotations shown beside a field, in this order. */
const CONSTRAINTS = [
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'pattern',
  'default',
] as const;

/** Descriptions are written with `code` in backticks, as in Markdown: shown as code. */
export const prose = (text: unknown) => html(text).replace(/`([^`]+)`/g, '<code>$1</code>');
const json = (value: unknown) => `<code>${html(JSON.stringify(value))}</code>`;
export const schemaAnchor = (name: string) => `schema-${name}`;
export const refName = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1);

/** A one-line type: a link for a named schema, the values of an enum, `array of ...`. */
export function typeLabel(schema: Schema): string {
  if (schema.$ref) return `<a href="#${html(schemaAnchor(refName(schema.$ref)))}">${html(refName(schema.$ref))}</a>`;
  if ('const' in schema) return json(schema.const);
  if (schema.enum) return `one of ${schema.enum.map(json).join(', ')}`;
  const alternatives = schema.oneOf ?? schema.anyOf;
  if (alternatives && !schema.type && !schema.properties) return [...new Set(alternatives.map(typeLabel))].join(' or ');
  if (schema.type === 'array' || schema.items) return `array of ${typeLabel(schema.items ?? {})}`;
  const type = Array.isArray(schema.type)
    ? schema.type.join(' or ')
    : (schema.type ?? (schema.properties ? 'object' : 'any JSON'));
  return `${html(type)}${schema.format ? ` <small>(${html(schema.format)})</small>` : ''}`;
}

export function notes(schema: Schema): string {
  const constraints = CONSTRAINTS.filter((key) => key in schema).map((key) => `${key} ${json(schema[key])}`);
  return [prose(schema.description), constraints.length > 0 ? `<small>${constraints.join(', ')}</small>` : '']
    .filter(Boolean)
    .join(' ');
}

/** The inline object a field holds (itself, or its array's items), if it has fields to unfold. */
function inlineObject(schema: Schema): Schema | undefined {
  const target = schema.type === 'array' || schema.items ? schema.items : schema;
  return target && !target.$ref && (target.properties || target.oneOf || target.anyOf) ? target : undefined;
}

export const tableRow = (...cells: string[]) => `<tr>${cells.map((cell) => `<td>${cell}</td>`).join('')}</tr>`;

export const nameCell = (name: string, required: boolean | undefined) =>
  `<code>${html(name)}</code>${required ? ' <b title="required">*</b>' : ''}`;

/** The fields of an object schema as a table, nested objects unfolded; alternatives listed after. */
function fieldsTable(schema: Schema, depth: number): string {
  const required = new Set(schema.required ?? []);
  const rows = Object.entries(schema.properties ?? {})
    .map(([name, field]) => {
      const nested = depth < MAX_DEPTH ? inlineObject(field) : undefined;
      return tableRow(
        nameCell(name, required.has(name)),
        typeLabel(field),
        `${notes(field)}${nested ? schemaBody(nested, depth + 1) : ''}`,
      );
    })
    .join('');
  const closed = schema.additionalProperties === false ? '<p><small>No other fields.</small></p>' : '';
  const table = rows
    ? `<div class="wide"><table class="fields"><tr><th>field</th><th>type</th><th></th></tr>${rows}</table></div>${closed}`
    : '';
  const alternatives = (schema.oneOf ?? schema.anyOf ?? [])
    .map((alternative) =>
      alternative.$ref || !alternative.properties
        ? `<li>${typeLabel(alternative)}</li>`
        : `<li>${variantLabel(alternative)}${fieldsTable(alternative, depth + 1)}</li>`,
    )
    .join('');
  return `${table}${alternatives ? `<p>One of:</p><ul>${alternatives}</ul>` : ''}`;
}

/** An alternative named by its title, or by the field whose constant tells it apart (`type "webhook"`). */
function variantLabel(alternative: Schema): string {
  const discriminator = Object.entries(alternative.properties ?? {}).find(([, field]) => 'const' in field);
  const name = alternative.title
    ? html(alternative.title)
    : discriminator
      ? `<code>${html(discriminator[0])}</code> ${json(discriminator[1].const)}`
      : 'object';
  return `${name}${alternative.description ? `: ${prose(alternative.description)}` : ''}`;
}

function schemaBody(schema: Schema, depth = 0): string {
  if (schema.properties || schema.oneOf || schema.anyOf) return fieldsTable(schema, depth);
  const nested = inlineObject(schema);
  return nested && depth < MAX_DEPTH ? `<p>${typeLabel(schema)}</p>${fieldsTable(nested, depth + 1)}` : '';
}

/** A schema where a body or an answer has one: its type, its fields, its example. */
export function schemaHtml(schema: Schema): string {
  const example = schema.examples?.[0];
  return (
    `<p>${typeLabel(schema)} ${notes(schema)}</p>${schema.$ref ? '' : schemaBody(schema)}` +
    (example === undefined
      ? ''
      : `<details><summary>example</summary><pre>${html(JSON.stringify(example, null, 2))}</pre></details>`)
  );
}
