/**
 * A worker process (as `tributary worker`) that also knows `test.crash`: an operation that kills
 * its own process, as a native crash or an out-of-memory kill would. Configured by the environment.
 */
import { pino } from 'pino';
import { loadConfig } from '../../bin/config/config.ts';
import { Platform } from '../../bin/platform.ts';
import { withExtra } from './harness.ts';
import { crash } from './crash-operation.ts';

const config = loadConfig();
await Platform.start(
  config,
  { api: false, worker: true },
  { logger: pino({ level: 'warn' }), families: withExtra([crash]) },
);
console.error(`worker consuming ${config.redisUrl}`);
