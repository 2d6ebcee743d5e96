import {
  alertChannelSchema,
  alertRuleSchema,
  alertSchema,
  newAlertChannelSchema,
  newAlertRuleSchema,
  type NewAlertRule,
} from '../../engine/model/index.ts';
import { ALERT_TEST_TIMEOUT_MS } from '../../engine/services/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, fromRequest, pageQuerySchema, idParams } from '../route-kit/index.ts';

const UNKNOWN_REFERENCE = {
  description:
    'A channel or flow the rule names is not of this tenant (`errors` gives the path of each), or no such rule.',
};

const pageQuery = { type: 'object', additionalProperties: false, properties: pageQuerySchema } as const;

/**
 * Alerts to the tenant (tag Logs): channels (a signed webhook, a Slack-style webhook), rules (a run
 * failed, failures in a window, a message held), and the alerts sent. The workers check and send them.
 */
export function alertRoutes({ alerts }: ApiContext) {
  const channels = '/api/v1/alert-channels';
  const rules = '/api/v1/alert-rules';
  // Defaults are filled in by the body's schema.
  const complete = (rule: NewAlertRule) => rule as Required<NewAlertRule>;
  return [
    defineRoute({
      method: 'post',
      path: channels,
      tag: 'Alert',
      scope: 'alerts:write',
      summary: 'Add an alert channel: a signed webhook, or a Slack-style incoming webhook',
      description:
        "A webhook channel's answer carries its signing secret (`whsec_...`), once: keep it to verify the " +
        '`webhook-signature` of each alert (Standard Webhooks: HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`). ' +
        "A Slack webhook's URL is kept sealed, as a secret is. The URL obeys the same address policy as `http.request`.",
      body: newAlertChannelSchema,
      responses: {
        201: {
          description: 'The channel; a webhook channel with its signing secret, shown this once.',
          schema: {
            ...alertChannelSchema,
            required: [...alertChannelSchema.required],
            properties: {
              ...alertChannelSchema.properties,
              secret: { type: 'string', description: 'The signing secret of a webhook channel (only now).' },
            },
          },
        },
      },
      handle: async ({ tenantId, body }) => ({
        status: 201,
        body: await fromRequest('$.body', () => alerts.addChannel(tenantId, body)),
      }),
    }),
    defineRoute({
      method: 'get',
      path: channels,
      tag: 'Alert',
      scope: 'alerts:read',
      summary: 'List alert channels',
      query: pageQuery,
      responses: { 200: { description: 'A page of channels.', schema: connectionSchema(alertChannelSchema) } },
      handle: async ({ tenantId, query }) => ({ body: await alerts.listChannels(tenantId, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${channels}/{id}`,
      tag: 'Alert',
      scope: 'alerts:read',
      summary: 'Get an alert channel',
      params: idParams,
      responses: { 200: { description: 'The channel.', schema: alertChannelSchema } },
      handle: async ({ tenantId, params }) => ({ body: await alerts.getChannel(tenantId, params.id) }),
    }),
    defineRoute({
      method: 'post',
      path: `${channels}/{id}/test`,
      tag: 'Alert',
      scope: 'alerts:write',
      summary: 'Send a test alert to a channel now, and say how it was answered',
      description:
        'An alert of type `alert.test` (signed as any, `rule` null), sent at once, not kept or retried: to check the ' +
        `URL, the secret and the receiver. At most ${ALERT_TEST_TIMEOUT_MS / 1000} s.`,
      params: idParams,
      responses: {
        200: {
          description: 'How the channel answered.',
          schema: {
            type: 'object',
            additionalProperties: false,
            required: ['sent'],
            properties: {
              sent: { type: 'boolean', description: 'It answered 2xx.' },
              status: { type: 'integer', description: 'Its answer, when it answered 2xx.' },
              error: { type: 'string', description: 'Why it was not sent: no answer, a status, a refused address.' },
            },
          },
        },
      },
      handle: async ({ tenantId, params }) => ({ body: await alerts.testChannel(tenantId, params.id) }),
    }),
    defineRoute({
      method: 'delete',
      path: `${channels}/{id}`,
      tag: 'Alert',
      scope: 'alerts:write',
      summary: 'Delete an alert channel (its pending alerts are not sent)',
      params: idParams,
      responses: { 204: { description: 'Deleted.' } },
      async handle({ tenantId, params }) {
        await alerts.deleteChannel(tenantId, params.id);
        return {};
      },
    }),
    defineRoute({
      method: 'post',
      path: rules,
      tag: 'Alert',
      scope: 'alerts:write',
      summary: 'Add an alert rule: when to alert (a run failed, failures in a window, a message held) and where',
      description:
        'A rule counts what happens after it is made. Each failure (or held message) is reported once; within ' +
        '`cooldownSeconds` of an alert, what happens is counted into the next one, so a flood sends one alert ' +
        'with a count.',
      body: newAlertRuleSchema,
      responses: { 201: { description: 'The rule.', schema: alertRuleSchema }, 404: UNKNOWN_REFERENCE },
      handle: async ({ tenantId, body }) => ({
        status: 201,
        body: await fromRequest('$.body', () => alerts.addRule(tenantId, complete(body))),
      }),
    }),
    defineRoute({
      method: 'get',
      path: rules,
      tag: 'Alert',
      scope: 'alerts:read',
      summary: 'List alert rules',
      query: pageQuery,
      responses: { 200: { description: 'A page of rules.', schema: connectionSchema(alertRuleSchema) } },
      handle: async ({ tenantId, query }) => ({ body: await alerts.listRules(tenantId, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${rules}/{id}`,
      tag: 'Alert',
      scope: 'alerts:read',
      summary: 'Get an alert rule',
      params: idParams,
      responses: { 200: { description: 'The rule.', schema: alertRuleSchema } },
      handle: async ({ tenantId, params }) => ({ body: await alerts.getRule(tenantId, params.id) }),
    }),
    defineRoute({
      method: 'put',
      path: `${rules}/{id}`,
      tag: 'Alert',
      scope: 'alerts:write',
      summary: 'Replace an alert rule (its counting goes on where it was)',
      params: idParams,
      body: newAlertRuleSchema,
      responses: { 200: { description: 'The rule.', schema: alertRuleSchema }, 404: UNKNOWN_REFERENCE },
      handle: async ({ tenantId, params, body }) => ({
        body: await fromRequest('$.body', () => alerts.replaceRule(tenantId, params.id, complete(body))),
      }),
    }),
    defineRoute({
      method: 'delete',
      path: `${rules}/{id}`,
      tag: 'Alert',
      scope: 'alerts:write',
      summary: 'Delete an alert rule',
      params: idParams,
      responses: { 204: { description: 'Deleted.' } },
      async handle({ tenantId, params }) {
        await alerts.deleteRule(tenantId, params.id);
        return {};
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/alerts',
      tag: 'Alert',
      scope: 'alerts:read',
      summary: 'List the alerts sent, newest first, with their delivery to each channel',
      query: pageQuery,
      responses: { 200: { description: 'A page of alerts.', schema: connectionSchema(alertSchema) } },
      handle: async ({ tenantId, query }) => ({ body: await alerts.listAlerts(tenantId, query) }),
    }),
  ];
}
