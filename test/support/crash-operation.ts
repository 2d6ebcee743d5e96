import { existsSync, writeFileSync } from 'node:fs';
import { defineOperation } from '../../engine/plugins/operations.ts';

/**
 * Kills the process running it, as a native crash or an out-of-memory kill would; with `onceMarker`, only
 * while that file does not exist (it creates it first): the process after it goes on.
 */
export const crash = defineOperation({
  name: 'test.crash',
  title: 'Crash the worker',
  description: 'Kills the process running it with SIGKILL.',
  version: '1.0.0',
  sideEffects: false,
  configSchema: {
    type: 'object',
    additionalProperties: false,
    properties: { onceMarker: { type: 'string' } },
  },
  run: async ({ config }) => {
    const { onceMarker } = config as { onceMarker?: string };
    if (onceMarker !== undefined && existsSync(onceMarker)) return 'survived';
    if (onceMarker !== undefined) writeFileSync(onceMarker, '');
    process.kill(process.pid, 'SIGKILL');
    return null;
  },
});
