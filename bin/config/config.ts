import path from 'node:path';
import { SchemaValidator, ValidationError } from '../../engine/model/index.ts';
import { type AddressRefusal, addressRanges, nonPublicRefusal } from '../../engine/outbound/index.ts';
import type { Setting } from './setting.ts';
import { serverSettings } from './settings/server.ts';
import { tenantsSettings } from './settings/tenants.ts';
import { runningSettings } from './settings/running.ts';
import { keepingSettings } from './settings/keeping.ts';

/**
 * Every setting, read from the environment. The one source of the configuration: loading (with
 * coercion and bounds), the Config type and the table in docs/configuration.md come from it.
 */
export const settings = {
  ...serverSettings,
  ...tenantsSettings,
  ...runningSettings,
  ...keepingSettings,
} as const satisfies Record<string, Setting>;

type Settings = typeof settings;
type ValueOf<S extends Setting> = S['schema'] extends { enum: readonly (infer E)[] }
  ? E
  : S['schema']['type'] extends 'integer'
    ? number
    : string;
export type Config = {
  -readonly [K in keyof Settings]:
    | ValueOf<Settings[K]>
    | (Settings[K]['schema'] extends { default: unknown } ? never : undefined);
};

const validator = new SchemaValidator<Config>(
  {
    type: 'object',
    properties: Object.fromEntries(Object.entries(settings).map(([key, setting]) => [key, setting.schema])),
  },
  'configuration',
  { coerce: true },
);

const SIZE = /^(\d+)\s*(b|kb|mb)?$/i;
const UNITS = { b: 1, kb: 1024, mb: 1024 * 1024 };

/** The configuration from these variables (blank counts as unset); a bad value is an error naming its variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(settings) as Array<[keyof Settings, Setting]>) {
    const text = env[setting.env]?.trim();
    if (!text) continue;
    if (setting.unit === 'bytes') {
      const size = SIZE.exec(text);
      if (!size) throw new Error(`${setting.env} must be a size such as 1048576, 512kb or 1mb, got "${text}"`);
      raw[key] = Number(size[1]) * UNITS[(size[2] ?? 'b').toLowerCase() as keyof typeof UNITS];
    } else {
      raw[key] = text;
    }
  }
  try {
    const config = validator.validate(raw);
    return { ...config, dataDir: path.resolve(config.dataDir) };
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const [first] = error.errors;
    const key = first.path.slice(2) as keyof Settings;
    throw new Error(`${settings[key]?.env ?? first.path} ${first.message}, got "${env[settings[key]?.env]?.trim()}"`);
  }
}

/**
 * The outbound addresses this process refuses: a shared deployment (on PostgreSQL) refuses non-public
 * ones unless told otherwise, less OUTBOUND_ALLOWED_NETWORKS; undefined where none are refused.
 */
export function outboundRefusal(config: Config): AddressRefusal | undefined {
  if ((config.outboundPrivateAddresses ?? (config.databaseUrl ? 'refuse' : 'allow')) === 'allow') return undefined;
  try {
    return nonPublicRefusal(config.outboundAllowedNetworks ? addressRanges(config.outboundAllowedNetworks) : undefined);
  } catch (error) {
    throw new Error(`OUTBOUND_ALLOWED_NETWORKS: ${(error as Error).message}`);
  }
}

/**
 * WORKER_CONCURRENCY, or its default for this process: a worker of its own takes more runs in flight (grouped, they
 * cost less CPU each); one that shares its process with the API takes fewer, or they would take the CPU the flow URLs
 * answer with.
 */
export function workerConcurrency(config: Config, servesTheApi: boolean): number {
  return config.workerConcurrency ?? (servesTheApi ? 64 : 128);
}

/** RUN_GROUP_TENANTS as tenant -> group. */
export function placedTenants(config: Config): Record<string, number> {
  const placed: Record<string, number> = {};
  for (const [, tenant, group] of (config.runGroupTenants ?? '').matchAll(/([^\s=,]+)\s*=\s*(\d+)/g))
    placed[tenant] = Number(group);
  return placed;
}

/** Where clients reach this process (printed, and the base of flow URLs). */
export function baseUrl(config: Config, port = config.port): string {
  return config.publicUrl ?? `http://127.0.0.1:${port}`;
}

/** The settings as the Markdown table docs/configuration.md holds. */
export function settingsTable(): string {
  const shown = (setting: Setting) =>
    setting.shownDefault ?? ('default' in setting.schema ? `\`${String(setting.schema.default)}\`` : '—');
  return [
    '| Variable | Default | Meaning |',
    '|---|---|---|',
    ...Object.values(settings as Record<string, Setting>).map(
      (setting) => `| \`${setting.env}\` | ${shown(setting)} | ${setting.description} |`,
    ),
  ].join('\n');
}

const TABLE_START = '<!-- settings: generated from bin/config/ by `npm run docs:config` -->';
const TABLE_END = '<!-- /settings -->';

/** The document with its settings table brought up to date (docs/configuration.md). */
export function withSettingsTable(markdown: string): string {
  const start = markdown.indexOf(TABLE_START);
  const end = markdown.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error(`the document has no ${TABLE_START} ... ${TABLE_END} block`);
  return `${markdown.slice(0, start + TABLE_START.length)}\n${settingsTable()}\n${markdown.slice(end)}`;
}
