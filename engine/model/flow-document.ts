import type { FromSchema } from 'json-schema-to-ts';

const identifier = '^[A-Za-z_][A-Za-z0-9_]{0,63}$';

export const webhookTriggerConfigSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    verify: {
      description: 'How a delivery proves it comes from the sender. Secrets are named, never inlined.',
      oneOf: [
        { type: 'object', additionalProperties: false, required: ['type'], properties: { type: { const: 'none' } } },
        {
          type: 'object',
          additionalProperties: false,
          required: ['type', 'header', 'secret'],
          description: 'A shared secret sent as-is in a header.',
          properties: {
            type: { const: 'header' },
            header: { type: 'string', minLength: 1 },
            secret: { type: 'string', pattern: identifier },
          },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['type', 'secret'],
          description:
            "A vendor's own webhook signature, declared by its operation family (the API reference lists them): " +
            'HMAC-SHA256 of the raw body in its header, deliveries deduplicated on its delivery id header.',
          properties: {
            type: {
              type: 'string',
              pattern: '^(?!(none|header|hmac-sha256)$)[a-z][a-z0-9-]{0,39}$',
              description: 'A signature an operation family declares (the API reference lists them).',
            },
            secret: {
              type: 'string',
              pattern: identifier,
              description: 'Secret variable holding the key the vendor signs with.',
            },
            previousSecret: {
              type: 'string',
              pattern: identifier,
              description:
                'During a rotation the vendor may still sign with the old key for a while: name it here, and remove ' +
                'it after.',
            },
            topic: {
              type: 'string',
              pattern: '^[a-z_]+/[a-z_]+$',
              description: "Only deliveries whose topic header (the vendor's) names this topic, e.g. refunds/create.",
            },
          },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['type', 'header', 'secret'],
          description: 'HMAC-SHA256 of the raw body, keyed with the secret, in a header.',
          properties: {
            type: { const: 'hmac-sha256' },
            header: { type: 'string', minLength: 1 },
            secret: { type: 'string', pattern: identifier },
            encoding: { enum: ['base64', 'hex'], description: 'Digest encoding; hex when omitted.' },
            prefix: { type: 'string', description: 'Text before the digest in the header, e.g. "sha256=".' },
          },
        },
      ],
    },
    deliveryIdHeader: {
      type: 'string',
      minLength: 1,
      description:
        "Header carrying the sender's delivery id, used to drop repeated deliveries. Idempotency-Key is always " +
        'honoured.',
    },
    keepHeaders: {
      type: 'array',
      maxItems: 20,
      uniqueItems: true,
      items: { type: 'string', pattern: '^[A-Za-z0-9-]{1,100}$' },
      description:
        "Headers to keep with each message (and give runs as $input.headers) besides the usual ones: the sender's " +
        'delivery id and topic, the signature, content-type, user-agent, idempotency-key, x-request-id, traceparent, ' +
        'tracestate. Any other header is dropped; a name that reads like a credential cannot be kept.',
    },
  },
} as const;

/** A length of time: "30s", "5m", "1h". */
const durationSchema = { type: 'string', pattern: '^[1-9]\\d{0,5}(s|m|h)$' } as const;

export const scheduleTriggerConfigSchema = {
  type: 'object',
  additionalProperties: false,
  description:
    'When to run: a cron pattern (with its time zone) or a fixed interval. Exactly one poll of a flow runs at a time.',
  properties: {
    cron: {
      type: 'string',
      minLength: 9,
      maxLength: 120,
      description: 'Five fields (minute hour day month weekday), e.g. "*/5 * * * *".',
    },
    timezone: {
      type: 'string',
      minLength: 1,
      maxLength: 64,
      description: 'IANA time zone of the cron pattern; UTC when absent.',
    },
    every: { ...durationSchema, description: 'An interval such as "30s", "5m" or "1h".' },
  },
} as const;

export const flowEdgeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['from', 'to'],
  properties: {
    from: { type: 'string', description: '"trigger" or a node id.' },
    to: { type: 'string', description: 'A node id.' },
    when: { type: 'string', description: 'A {{ predicate }}; the edge is followed only when it holds.' },
    on: {
      enum: ['success', 'error'],
      description:
        'success (the default): followed once `from` succeeds. error: an error path, followed when `from` fails ' +
        'for good (a permanent error, or its last retry) and its `when`, if any, holds, with the failure as ' +
        '$failure ({kind, message, nodeId, attempts}); the run then ends handled instead of failed. A failure no ' +
        'error path takes fails the run.',
    },
  },
} as const;

export const flowNodeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'operation'],
  properties: {
    id: {
      type: 'string',
      pattern: identifier,
      not: { const: 'trigger' },
      description: 'Referenced as $steps.<id>.',
    },
    name: { type: 'string', maxLength: 200 },
    operation: {
      type: 'string',
      minLength: 1,
      description: 'A registered operation (transform, http.request, ...) or action:<name>, a tenant action.',
    },
    operationVersion: {
      type: 'integer',
      minimum: 1,
      maximum: 999,
      description:
        'The major version of the operation the node runs. Publishing sets it to the newest where it is ' +
        'absent, so a later breaking version of the operation never changes a published flow.',
    },
    config: {
      type: 'object',
      // Any fields: the operation's own schema checks them (generated clients must let them be written).
      additionalProperties: true,
      default: {},
      description:
        "Checked against the operation's config schema; a string that is exactly {{ expression }} is evaluated.",
    },
    retry: {
      type: 'object',
      additionalProperties: false,
      description: 'How often a retryable failure is tried again.',
      properties: {
        maxAttempts: { type: 'integer', minimum: 1, maximum: 25, default: 5 },
        backoffMs: {
          type: 'integer',
          minimum: 0,
          maximum: 3_600_000,
          default: 1000,
          description: 'First delay; doubles on each retry, with jitter.',
        },
      },
    },
    timeoutMs: {
      type: 'integer',
      minimum: 1,
      maximum: 900_000,
      description: "One attempt's deadline; NODE_TIMEOUT_MS when absent.",
    },
    nodes: {
      type: 'array',
      minItems: 1,
      maxItems: 50,
      items: { type: 'object' },
      description:
        "A loop's body (operation loop only): nodes of the same form, run once per item. Their ids are unique " +
        'across the flow.',
    },
    edges: {
      type: 'array',
      maxItems: 250,
      items: flowEdgeSchema,
      description:
        'The edges of a loop\'s body, from "item" (the item entering it) or one of its nodes. Without them the ' +
        "body's nodes run one after another, in the order written.",
    },
  },
} as const;

/** A key over the message: one `{{ expression }}` reading `$input` alone, checked at publish. */
const flowControlKeySchema = {
  type: 'string',
  minLength: 5,
  maxLength: 1000,
  description:
    'One {{ expression }} over the message ($input: body, headers, query), e.g. "{{ $input.body.id }}". It must give ' +
    'a string or a number (at most 256 characters); a message for which it gives nothing fails its run for good.',
} as const;

export const flowControlSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'How runs of this flow wait for one another, by the business object their message is about.',
  properties: {
    concurrency: {
      type: 'object',
      additionalProperties: false,
      required: ['key'],
      description:
        'Runs whose key is equal never exceed `limit` at once, and start in the order their messages arrived: with ' +
        'limit 1 the runs about one order run one after another, from the start of the first to its end (waits ' +
        'and retries included). The flow-wide `concurrency` keeps its meaning beside it.',
      properties: {
        key: flowControlKeySchema,
        limit: { type: 'integer', minimum: 1, maximum: 1000, default: 1 },
        scope: {
          enum: ['flow', 'tenant'],
          default: 'flow',
          description:
            "flow: this flow's runs share the count per key. tenant: every flow of the tenant whose key is tenant-" +
            'scoped shares it (a create flow and an update flow serialise per order).',
        },
      },
    },
    priority: {
      type: 'integer',
      minimum: 1,
      maximum: 5,
      default: 3,
      description:
        "1 (first) to 5: while the tenant's runs wait for workers, runs of a higher priority start first, flows of one " +
        'priority in turn. Bulk replays run at 5 unless they say otherwise.',
    },
    debounce: {
      type: 'object',
      additionalProperties: false,
      required: ['key', 'period'],
      description:
        'Messages with an equal key arriving within `period` of each other collapse into one run, of the last of ' +
        'them, started `period` after it arrived, or `maxWait` after the first if that comes sooner. The runs of ' +
        'the others end `debounced`, naming the run that took their place (debouncedBy). Replays are not debounced.',
      properties: {
        key: flowControlKeySchema,
        period: { ...durationSchema, description: 'How long a message waits for a later one: "2s", "1m"; at most 1h.' },
        maxWait: {
          ...durationSchema,
          description:
            "Longest a key's first message waits for its run, however often later ones arrive: at least the period, " +
            'at most 24h; ten periods (at most 24h) when absent.',
        },
      },
    },
  },
} as const;

export const flowDocumentSchema = {
  title: 'FlowDocument',
  description: 'A flow: a trigger, then nodes that each run a registered operation, joined by edges.',
  type: 'object',
  additionalProperties: false,
  required: ['key', 'name', 'trigger', 'nodes', 'edges'],
  examples: [
    {
      key: 'orders-to-erp',
      name: 'Orders to ERP',
      trigger: { type: 'webhook', config: {} },
      nodes: [
        {
          id: 'map',
          operation: 'transform',
          config: { expression: "{{ {'id': $input.body.id, 'total': $input.body.total} }}" },
        },
        {
          id: 'send',
          operation: 'http.request',
          config: { method: 'POST', url: '{{ $vars.ERP_URL }}/orders', body: '{{ $steps.map }}' },
          retry: { maxAttempts: 5, backoffMs: 1000 },
        },
      ],
      edges: [
        { from: 'trigger', to: 'map' },
        { from: 'map', to: 'send' },
      ],
    },
  ],
  properties: {
    key: {
      type: 'string',
      pattern: '^[a-z0-9][a-z0-9-]{0,62}$',
      description: 'URL-safe, unique per tenant; part of the flow URL.',
    },
    name: { type: 'string', minLength: 1, maxLength: 200, description: 'Shown in lists and the dashboard.' },
    description: { type: 'string', maxLength: 4000 },
    concurrency: {
      type: 'integer',
      minimum: 1,
      maximum: 10_000,
      description:
        'Most runs of this flow executing at once, across all workers (an ERP that takes 5 concurrent requests: ' +
        "5). Its other runs wait their turn without delaying the tenant's other flows. Unset: no limit of its own.",
    },
    flowControl: flowControlSchema,
    failureFlow: {
      type: 'string',
      pattern: '^[a-z0-9][a-z0-9-]{0,62}$',
      description:
        'The key of a flow of the same tenant to start when a run of this one fails (an error path that handles it ' +
        'ends the run handled, not failed). Its message body: {run: {id, flowId, flowVersion, messageId}, flow, ' +
        "error, input}. A failure flow's own failures start nothing.",
    },
    trigger: {
      type: 'object',
      required: ['type'],
      description: 'A webhook (the flow URL receives messages) or a schedule (the flow polls).',
      properties: { type: { enum: ['webhook', 'schedule'] } },
      oneOf: [
        {
          type: 'object',
          additionalProperties: false,
          required: ['type'],
          properties: { type: { const: 'webhook' }, config: webhookTriggerConfigSchema },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['type', 'config'],
          properties: { type: { const: 'schedule' }, config: scheduleTriggerConfigSchema },
        },
      ],
    },
    nodes: {
      type: 'array',
      description: 'The steps; each runs one operation (GET /api/v1/low-code-actions/operations lists them).',
      minItems: 1,
      maxItems: 200,
      items: flowNodeSchema,
    },
    edges: {
      type: 'array',
      description: 'Which node runs after which; every node is reachable from the trigger, with no cycles.',
      maxItems: 1000,
      items: flowEdgeSchema,
    },
  },
} as const;

export type FlowDocument = FromSchema<typeof flowDocumentSchema>;
export type WebhookTriggerConfig = FromSchema<typeof webhookTriggerConfigSchema>;
export type FlowControl = FromSchema<typeof flowControlSchema>;
export type ScheduleTriggerConfig = FromSchema<typeof scheduleTriggerConfigSchema>;
