import type { DestinationType } from '../../engine/plugins/index.ts';
import { destinationSchema } from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import { defineRoute, fromRequest, byNameRoutes } from '../route-kit/index.ts';

const nameParams = {
  type: 'object',
  required: ['name'],
  properties: {
    name: {
      type: 'string',
      pattern: '^[A-Za-z_][A-Za-z0-9_-]{0,63}$',
      description: 'Named in a node\'s config as "destination".',
    },
  },
} as const;

const subscriptionSchema = {
  type: 'object',
  required: ['id', 'topic', 'uri', 'apiVersion'],
  properties: {
    id: { type: 'string', description: "The subscription's id in the shop." },
    topic: { type: 'string' },
    uri: { type: 'string', description: 'The flow URL the shop now delivers to.' },
    apiVersion: { type: 'string', description: 'Webhook API version (YYYY-MM).' },
    warnings: {
      type: 'array',
      items: { type: 'string' },
      description: 'For example: the address is one the shop cannot reach.',
    },
  },
} as const;

/** The PUT body: one of the destination types the operation families declare. */
function destinationBodySchema(types: DestinationType[]): Record<string, unknown> {
  return types.length === 1 ? types[0].schema : { oneOf: types.map((type) => type.schema) };
}

export function destinationRoutes({ destinations, destinationTypes, webhookSubscribers }: ApiContext) {
  // The topics some family can subscribe a flow URL to; the first is the default.
  const topics = [...new Set(Object.values(webhookSubscribers).flatMap((subscriber) => subscriber.topics))];
  const base = '/api/v1/destinations';
  return [
    defineRoute({
      method: 'put',
      path: `${base}/{name}`,
      tag: 'Destination',
      scope: 'destinations:write',
      summary: 'Create or replace a destination',
      description:
        'Credentials are write-only: they are sealed (AES-256-GCM) and never shown again; send them all on every ' +
        'replace.',
      params: nameParams,
      body: destinationBodySchema(Object.values(destinationTypes)),
      responses: {
        200: { description: 'Replaced.', schema: destinationSchema },
        201: { description: 'Created.', schema: destinationSchema },
      },
      async handle({ tenantId, params, body }) {
        const given = body as Record<string, unknown> & { type: string };
        const { destination, created } = await fromRequest('$.body', () =>
          destinations.put(tenantId, params.name, given),
        );
        return { status: created ? 201 : 200, body: destination };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${base}/{name}/webhooks`,
      tag: 'Destination',
      scope: 'destinations:write',
      summary: "Register a flow URL as a webhook subscription in the destination's shop",
      description:
        "Replaces setting the webhook up by hand in the shop's admin: the shop delivers the topic (JSON, the destination's API version) " +
        "to the flow's URL.",
      params: nameParams,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['flowId'],
        properties: {
          flowId: { type: 'string', minLength: 1, description: 'The flow whose URL receives the deliveries.' },
          topic: topics.length > 0 ? { enum: topics, default: topics[0] } : { type: 'string' },
        },
      },
      responses: {
        201: { description: 'Subscribed.', schema: subscriptionSchema },
        502: { description: 'The shop refused or answered something else: its answer is in detail.' },
        503: { description: 'The shop could not be reached: retry later.' },
      },
      async handle({ tenantId, params, body }) {
        const request = { flowId: body.flowId, topic: body.topic ?? topics[0] };
        const target = await fromRequest('$.body', () => destinations.webhookTarget(tenantId, params.name, request));
        return { status: 201, body: await destinations.subscribe(tenantId, target) };
      },
    }),
    ...byNameRoutes({
      base,
      tag: 'Destination',
      noun: ['destination', 'destinations'],
      item: destinationSchema,
      nameParams,
      scopes: { read: 'destinations:read', write: 'destinations:write' },
      records: destinations,
    }),
  ];
}
