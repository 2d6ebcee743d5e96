import type { FromSchema } from 'json-schema-to-ts';
import { timestamp, nullableTimestamp } from './common.ts';
import { PRODUCTION } from '../environments.ts';

export const tenantLimitsSchema = {
  type: 'object',
  additionalProperties: false,
  description:
    "An operator's overrides of the deployment's per-tenant settings; a setting left out is the deployment's.",
  properties: {
    weight: {
      type: 'integer',
      minimum: 1,
      maximum: 100,
      description: 'Share of fair dispatch: a tenant of weight 3 gets three runs started for each of weight 1 (1).',
    },
    concurrency: {
      type: 'integer',
      minimum: 0,
      maximum: 100_000,
      description: 'Most runs executing at once across all workers; 0 for no limit (TENANT_CONCURRENCY).',
    },
    deliveriesPerSecond: {
      type: 'integer',
      minimum: 1,
      maximum: 1_000_000,
      description: 'Deliveries its flow URLs accept per second (TENANT_DELIVERIES_PER_SECOND).',
    },
    deliveryBurst: {
      type: 'integer',
      minimum: 1,
      maximum: 10_000_000,
      description: 'Deliveries accepted at once (TENANT_DELIVERY_BURST).',
    },
    apiCallsPerSecond: {
      type: 'integer',
      minimum: 1,
      maximum: 1_000_000,
      description: 'API calls its clients may make per second (TENANT_API_CALLS_PER_SECOND).',
    },
    apiCallBurst: {
      type: 'integer',
      minimum: 1,
      maximum: 10_000_000,
      description: 'API calls its clients may make at once (TENANT_API_CALL_BURST).',
    },
    retentionDays: {
      type: 'integer',
      minimum: 7,
      maximum: 3650,
      description: 'Days its messages, runs and steps are kept, at most RETENTION_MAX_DAYS (RETENTION_DAYS).',
    },
    failedRetentionDays: {
      type: 'integer',
      minimum: 7,
      maximum: 3650,
      description: 'Days its failed and handled runs are kept, at most RETENTION_MAX_DAYS (RETENTION_FAILED_DAYS).',
    },
    maxQueuedRuns: {
      type: 'integer',
      minimum: 0,
      maximum: 1_000_000_000,
      description: 'Most runs waiting to start; 0 for no cap (TENANT_MAX_QUEUED_RUNS).',
    },
  },
} as const;

export const tenantSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'status', 'suspendedReason', 'suspendedAt', 'limits', 'createdAt'],
  properties: {
    id: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,62}$' },
    name: { type: 'string' },
    status: {
      enum: ['active', 'suspended'],
      description: "A suspended tenant's API calls get 403; its flow URLs record messages but start no runs.",
    },
    suspendedReason: { type: ['string', 'null'] },
    suspendedAt: nullableTimestamp,
    limits: tenantLimitsSchema,
    createdAt: timestamp,
  },
} as const;

export const userSettingsSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['subject', 'settings', 'updatedAt'],
  properties: {
    subject: {
      type: 'string',
      description: "The token's subject (a client id, or a user of an external identity provider).",
    },
    settings: {
      type: 'object',
      additionalProperties: false,
      required: ['timezone', 'locale', 'pageSize'],
      properties: {
        timezone: {
          type: 'string',
          minLength: 1,
          maxLength: 64,
          default: 'UTC',
          description: 'An IANA time zone, e.g. Europe/Berlin.',
        },
        locale: {
          type: 'string',
          pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$',
          default: 'en-US',
          description: 'A BCP 47 language tag.',
        },
        pageSize: {
          type: 'integer',
          minimum: 1,
          maximum: 200,
          default: 50,
          description: 'Default page size of lists in a UI.',
        },
      },
    },
    updatedAt: nullableTimestamp,
  },
} as const;

export const environmentNameSchema = {
  type: 'string',
  pattern: '^[a-z][a-z0-9-]{0,31}$',
  description: `An environment's name: lower-case letters, digits and dashes (\`${PRODUCTION}\` always exists).`,
} as const;

export const environmentSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'createdAt'],
  properties: {
    name: environmentNameSchema,
    createdAt: timestamp,
  },
} as const;

export type Tenant = FromSchema<typeof tenantSchema>;

export type Environment = FromSchema<typeof environmentSchema>;

export type TenantLimits = FromSchema<typeof tenantLimitsSchema>;

export type UserSettings = FromSchema<typeof userSettingsSchema>;
