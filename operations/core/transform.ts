import { defineOperation } from '../../engine/plugins/index.ts';

export const transform = defineOperation({
  name: 'transform',
  title: 'Transform',
  description: 'Shapes data with JSONata: the output is the value of `expression` (usually a `{{ }}` expression).',
  version: '1.0.0',
  sideEffects: false,
  configSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['expression'],
    properties: {
      expression: { description: 'Any JSON; `{{ <JSONata> }}` evaluates with $input, $steps, $vars, $secrets.' },
    },
  },
  run: async ({ config }) => config.expression,
});
