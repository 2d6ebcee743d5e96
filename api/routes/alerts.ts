import { AlertSender, newWebhookSecret } from '../../engine/alerts/index.ts';
import {
  alertChannelSchema,
  alertRuleSchema,
  alertSchema,
  newAlertChannelSchema,
  newAlertRuleSchema,
  newId,
  NotFoundError,
  ValidationError,
  type NewAlertRule,
} from '../../engine/model/index.ts';
import { alertChannelContext } from '../../engine/secrets/index.ts';
import type { ApiContext } from '../context.ts';
import { connectionSchema, defineRoute, pageQuerySchema } from '../route.ts';
import { idParams } from './editable-flows.ts';

/** How long a test alert may take to be answered. */
const TEST_TIMEOUT_MS = 10_000;

const UNKNOWN_REFERENCE = {
  description:
    'A channel or flow the rule names is not of this tenant (`errors` gives the path of each), or no such rule.',
};

const pageQuery = { type: 'object', additionalProperties: false, properties: pageQuerySchema } as const;

/**
 * What the API shows of a channel's URL: a Slack webhook's origin only (its path is the credential), a
 * webhook's without its query (which may carry a token).
 */
function shownUrl(type: string, text: string): string {
  const url = new URL(text);
  return type === 'slack' ? `${url.origin}/…` : `${url.origin}${url.pathname}${url.search ? '?…' : ''}`;
}

/**
 * Alerts to the tenant (seed tag Logs): channels (a signed webhook, a Slack-style webhook), rules (a run
 * failed, failures in a window, a message held), and the alerts sent. The workers check and send them.
 */
export function alertRoutes({ store, keyring, http }: ApiContext) {
  const channels = '/api/v1/alert-channels';
  const rules = '/api/v1/alert-rules';
  const sender = new AlertSender(keyring, http, TEST_TIMEOUT_MS);
  /**
   * A rule names channels and flows of its own tenant only: another tenant's are not found (404, as in a path), each
   * with its path, exactly as ids that never were.
   */
  const checkReferences = async (tenantId: string, rule: NewAlertRule) => {
    const flowIds = ('flowIds' in rule.condition && rule.condition.flowIds) || [];
    const [channels, flows] = await Promise.all([
      Promise.all(rule.channelIds.map((id) => store.getAlertChannel(tenantId, id))),
      Promise.all(flowIds.map((id) => store.getFlow(tenantId, id))),
    ]);
    const errors = [
      ...rule.channelIds.flatMap((_, index) =>
        channels[index]
          ? []
          : [{ path: `$.body.channelIds[${index}]`, message: 'is not an alert channel of this tenant' }],
      ),
      ...flowIds.flatMap((_, index) =>
        flows[index] ? [] : [{ path: `$.body.condition.flowIds[${index}]`, message: 'is not a flow of this tenant' }],
      ),
    ];
    if (errors.length > 0) throw new NotFoundError('the alert rule names what this tenant does not have', errors);
  };
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
      async handle({ tenantId, body }) {
        const refusal = http.urlRefusal(body.url);
        if (refusal) throw new ValidationError('Invalid alert channel', [{ path: '$.body.url', message: refusal }]);
        const id = newId();
        const secret = body.type === 'webhook' ? newWebhookSecret() : undefined;
        const channel = await store.createAlertChannel(tenantId, {
          id,
          name: body.name,
          type: body.type,
          shownUrl: shownUrl(body.type, body.url),
          sealed: keyring.seal(JSON.stringify({ url: body.url, secret }), alertChannelContext(tenantId, id)),
        });
        return { status: 201, body: secret ? { ...channel, secret } : channel };
      },
    }),
    defineRoute({
      method: 'get',
      path: channels,
      tag: 'Alert',
      scope: 'alerts:read',
      summary: 'List alert channels',
      query: pageQuery,
      responses: { 200: { description: 'A page of channels.', schema: connectionSchema(alertChannelSchema) } },
      handle: async ({ tenantId, query }) => ({ body: await store.listAlertChannels(tenantId, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${channels}/{id}`,
      tag: 'Alert',
      scope: 'alerts:read',
      summary: 'Get an alert channel',
      params: idParams,
      responses: { 200: { description: 'The channel.', schema: alertChannelSchema } },
      async handle({ tenantId, params }) {
        const channel = await store.getAlertChannel(tenantId, params.id);
        if (!channel) throw new NotFoundError(`no alert channel ${params.id}`);
        return { body: channel };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${channels}/{id}/test`,
      tag: 'Alert',
      scope: 'alerts:write',
      summary: 'Send a test alert to a channel now, and say how it was answered',
      description:
        'An alert of type `alert.test` (signed as any, `rule` null), sent at once, not kept or retried: to check the ' +
        `URL, the secret and the receiver. At most ${TEST_TIMEOUT_MS / 1000} s.`,
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
      async handle({ tenantId, params }) {
        const channel = await store.getSealedAlertChannel(tenantId, params.id);
        if (!channel) throw new NotFoundError(`no alert channel ${params.id}`);
        const outcome = await sender.send(tenantId, channel, {
          id: newId(),
          type: 'alert.test',
          tenantId,
          rule: null,
          count: 0,
          text: '[test] a test alert from Tributary: this channel works',
          sample: null,
          runUrl: null,
          createdAt: new Date().toISOString(),
        });
        return { body: outcome.sent ? outcome : { sent: false, error: outcome.error } };
      },
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
        if (!(await store.deleteAlertChannel(tenantId, params.id)))
          throw new NotFoundError(`no alert channel ${params.id}`);
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
      async handle({ tenantId, body }) {
        await checkReferences(tenantId, body);
        return { status: 201, body: await store.createAlertRule(tenantId, newId(), body as Required<typeof body>) };
      },
    }),
    defineRoute({
      method: 'get',
      path: rules,
      tag: 'Alert',
      scope: 'alerts:read',
      summary: 'List alert rules',
      query: pageQuery,
      responses: { 200: { description: 'A page of rules.', schema: connectionSchema(alertRuleSchema) } },
      handle: async ({ tenantId, query }) => ({ body: await store.listAlertRules(tenantId, query) }),
    }),
    defineRoute({
      method: 'get',
      path: `${rules}/{id}`,
      tag: 'Alert',
      scope: 'alerts:read',
      summary: 'Get an alert rule',
      params: idParams,
      responses: { 200: { description: 'The rule.', schema: alertRuleSchema } },
      async handle({ tenantId, params }) {
        const rule = await store.getAlertRule(tenantId, params.id);
        if (!rule) throw new NotFoundError(`no alert rule ${params.id}`);
        return { body: rule };
      },
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
      async handle({ tenantId, params, body }) {
        await checkReferences(tenantId, body);
        const rule = await store.replaceAlertRule(tenantId, params.id, body as Required<typeof body>);
        if (!rule) throw new NotFoundError(`no alert rule ${params.id}`);
        return { body: rule };
      },
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
        if (!(await store.deleteAlertRule(tenantId, params.id))) throw new NotFoundError(`no alert rule ${params.id}`);
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
      handle: async ({ tenantId, query }) => ({ body: await store.listAlerts(tenantId, query) }),
    }),
  ];
}
