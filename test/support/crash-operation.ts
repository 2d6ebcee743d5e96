import { defineOperation } from '../../engine/plugins/operations.ts';

/** Kills the process running it, as a native crash or an out-of-memory kill would. */
export const crash = defineOperation({
  name: 'test.crash',
  title: 'Crash the worker',
  description: 'Kills the process running it with SIGKILL.',
  version: '1.0.0',
  sideEffects: false,
  configSchema: { type: 'object', additionalProperties: false, properties: {} },
  run: async () => {
    process.kill(process.pid, 'SIGKILL');
    return null;
  },
});
