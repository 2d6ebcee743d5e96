import { truthy } from '../../engine/expressions/index.ts';
import { defineOperation } from '../../engine/plugins/index.ts';

export const filter = defineOperation({
  name: 'filter',
  title: 'Filter',
  description: 'Continues only when `condition` holds; otherwise the run ends as `filtered` (not a failure).',
  version: '1.0.0',
  sideEffects: false,
  configSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['condition'],
    properties: {
      condition: { description: 'A `{{ predicate }}`; JSONata truthiness decides.' },
      reason: { type: 'string', maxLength: 500, description: 'Recorded on the run when it is filtered.' },
    },
  },
  run: async (ctx) => {
    const { condition, reason } = ctx.config;
    if (!truthy(condition)) return ctx.stop('filtered', reason ?? `filter ${ctx.nodeId}: condition did not hold`);
    return { passed: true };
  },
});
