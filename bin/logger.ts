import { pino, type Logger } from 'pino';
import type { Config } from './config/config.ts';

/** Paths of secrets and credentials pino masks in any logged object: a second fence, not the first. */
const REDACT = [
  'authorization',
  'password',
  'secret',
  'token',
  'client_secret',
  'config.auth',
  '*.authorization',
  '*.password',
  '*.secret',
  '*.client_secret',
  '*.token',
];

export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({ level: config.logLevel, redact: { paths: REDACT, censor: '[REDACTED]' } });
}
