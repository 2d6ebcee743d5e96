import type { Migration } from './migration.ts';

/**
 * Two names a run bound hid JSONata's functions of the same name: `$error` (the failure on an error path) and
 * `$lookup` (a data space's document). They are `$failure` and `$document` now, and `$error(message)` and
 * `$lookup(object, key)` are JSONata's. Flows saved before keep their meaning: in their drafts and versions, every
 * `$lookup` was the data space's, and every `$error` not called was the failure (a call never worked).
 */
const RENAMED = (column: string) =>
  `regexp_replace(regexp_replace(${column}::text, '\\$lookup(?![A-Za-z0-9_])', '$document', 'g'),
                  '\\$error(?![A-Za-z0-9_]|\\s*\\()', '$failure', 'g')::jsonb`;
const MENTIONS = (column: string) => `${column}::text ~ '\\$(lookup|error)(?![A-Za-z0-9_])'`;

export const migration: Migration = {
  version: 23,
  name: 'expression names',
  sql: `
    update flows set draft = ${RENAMED('draft')} where ${MENTIONS('draft')};
    update flow_versions set document = ${RENAMED('document')} where ${MENTIONS('document')};
  `,
};
