import { defineOperation } from '../../engine/plugins/index.ts';

const configSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['space', 'key', 'value'],
  properties: {
    space: { type: 'string', minLength: 1, maxLength: 100 },
    key: { type: 'string', minLength: 1, maxLength: 512 },
    value: { description: 'Any JSON.' },
  },
} as const;

/** Writes one document of a data space; read it back in expressions with `$document(space, key)`. */
export const dataSpacePut = defineOperation({
  name: 'dataspace.put',
  title: 'Put a data space document',
  description:
    "Creates or replaces the document `key` of the tenant's data space `space` with `value` (the space must exist). " +
    'The output says whether it was new.',
  version: '1.0.0',
  sideEffects: true,
  configSchema,
  preview: async ({ config }) => ({ put: { space: config.space, key: config.key, value: config.value } }),
  async run({ config, dataSpaces }) {
    const { created } = await dataSpaces.put(config.space, config.key, config.value);
    return { space: config.space, key: config.key, created };
  },
});
