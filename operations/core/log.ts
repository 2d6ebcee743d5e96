import { defineOperation } from '../../engine/plugins/index.ts';

/** Writes a line to the run's log (the Logs API) and the process log; the output is the line. */
export const log = defineOperation({
  name: 'log',
  title: 'Log',
  description:
    "Logs `message` (with `data`, if given) at `level` in the run's log, searchable with the Logs API; secrets are " +
    'redacted. The output is what was logged.',
  version: '1.0.0',
  sideEffects: false,
  configSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['message'],
    properties: {
      level: { enum: ['info', 'warn', 'error'], default: 'info' },
      message: { type: 'string', maxLength: 2000 },
      data: { description: 'Any JSON logged with the message.' },
    },
  },
  async run({ config, logger }) {
    const level = config.level ?? 'info';
    if (config.data === undefined) logger[level](config.message);
    else logger[level]({ data: config.data }, config.message);
    return { level, message: config.message };
  },
});
