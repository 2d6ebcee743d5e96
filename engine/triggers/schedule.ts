import cronParser from 'cron-parser';
import type { FieldError, ScheduleTriggerConfig } from '../model/index.ts';

/** Shortest interval a schedule may have: a poll more often than this is a loop, not a schedule. */
export const MIN_INTERVAL_MS = 1000;

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000 } as const;

/** "5m" -> 300000. */
export function intervalMs(every: string): number {
  return Number(every.slice(0, -1)) * UNIT_MS[every.slice(-1) as keyof typeof UNIT_MS];
}

/** What BullMQ's job scheduler repeats on. */
export function repeatOptions(config: ScheduleTriggerConfig): { pattern: string; tz: string } | { every: number } {
  return config.cron !== undefined
    ? { pattern: config.cron, tz: config.timezone ?? 'UTC' }
    : { every: intervalMs(config.every!) };
}

/** Problems the JSON Schema cannot see: exactly one of cron and every, a pattern that parses, a real time zone. */
export function scheduleErrors(config: ScheduleTriggerConfig, at: string): FieldError[] {
  if ((config.cron === undefined) === (config.every === undefined))
    return [{ path: at, message: 'needs exactly one of cron and every' }];
  if (config.every !== undefined) {
    if (config.timezone !== undefined) return [{ path: `${at}.timezone`, message: 'applies to cron only' }];
    return intervalMs(config.every) < MIN_INTERVAL_MS
      ? [{ path: `${at}.every`, message: `must be at least ${MIN_INTERVAL_MS / 1000}s` }]
      : [];
  }
  const errors: FieldError[] = [];
  if (config.cron!.trim().split(/\s+/).length !== 5)
    errors.push({ path: `${at}.cron`, message: 'must have five fields: minute hour day-of-month month day-of-week' });
  else {
    try {
      cronParser.parseExpression(config.cron!, { tz: 'UTC' });
    } catch (error) {
      errors.push({ path: `${at}.cron`, message: `is not a valid cron pattern: ${(error as Error).message}` });
    }
  }
  if (config.timezone !== undefined) {
    try {
      new Intl.DateTimeFormat('en', { timeZone: config.timezone });
    } catch {
      errors.push({ path: `${at}.timezone`, message: `is not a known time zone: ${config.timezone}` });
    }
  }
  return errors;
}
