import { createHmac, randomBytes } from 'node:crypto';
import type { Alert } from '../model/index.ts';
import type { AlertFinding, CheckedAlertRule, LeasedAlertDelivery } from '../store/index.ts';

const SECRET_PREFIX = 'whsec_';

/** A webhook channel's signing secret, as Standard Webhooks writes one: `whsec_` and 24 random bytes in base64. */
export const newWebhookSecret = () => `${SECRET_PREFIX}${randomBytes(24).toString('base64')}`;

/**
 * The Standard Webhooks signature of a message: HMAC-SHA256, under the secret's bytes, of
 * `<webhook-id>.<webhook-timestamp>.<body>`, in base64, versioned `v1,`.
 */
export function webhookSignature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** What an alert says, in one line: a count, what it counts, the rule; never a body or an error's words. */
export function alertText(rule: Pick<CheckedAlertRule, 'name' | 'condition'>, finding: AlertFinding): string {
  const { count, sample } = finding;
  const runs = count === 1 ? 'run' : 'runs';
  const flow = sample?.flowKey ? ` of ${sample.flowKey}` : '';
  const latest = sample?.errorKind ? ` (latest: ${sample.errorKind}${sample.node ? ` in ${sample.node}` : ''})` : '';
  const { condition } = rule;
  const failed = condition.kind !== 'message-held' && condition.includeHandled ? 'failed or handled' : 'failed';
  const said =
    condition.kind === 'run-failed'
      ? `${count} ${runs}${flow} ${failed}${latest}`
      : condition.kind === 'failure-rate'
        ? `${count} ${runs} ${failed} within ${condition.windowSeconds} s${latest}`
        : `${count} ${count === 1 ? 'message has' : 'messages have'} been held for over ${condition.olderThanSeconds} s`;
  return `[${rule.name}] ${said}`;
}

/** An alert as a webhook channel receives it (its JSON body). */
export interface AlertPayload {
  id: string;
  /** `alert.<condition kind>`, or `alert.test`. */
  type: string;
  tenantId: string;
  /** The rule that made it; none for a test alert. */
  rule: { id: string; name: string } | null;
  count: number;
  text: string;
  sample: Alert['sample'];
  runUrl: string | null;
  createdAt: string;
}

/** The payload of an alert being delivered. */
export function alertPayload(delivery: LeasedAlertDelivery, runUrl: string | undefined): AlertPayload {
  const { alert } = delivery;
  return {
    id: alert.id,
    type: `alert.${alert.kind}`,
    tenantId: delivery.tenantId,
    rule: { id: alert.ruleId, name: alert.ruleName },
    count: alert.count,
    text: alert.text,
    sample: alert.sample,
    runUrl: runUrl ?? null,
    createdAt: alert.createdAt,
  };
}

export interface AlertRequest {
  headers: Record<string, string>;
  body: string;
}

/** The JSON a webhook channel receives, signed (Standard Webhooks headers). */
export function webhookAlert(payload: AlertPayload, secret: string, now = Date.now()): AlertRequest {
  const body = JSON.stringify(payload);
  const timestamp = Math.floor(now / 1000);
  return {
    headers: {
      'content-type': 'application/json',
      'webhook-id': payload.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': webhookSignature(secret, payload.id, timestamp, body),
    },
    body,
  };
}

/** What a Slack-style incoming webhook receives: the line, and a link to the run. */
export function slackAlert(payload: AlertPayload): AlertRequest {
  // Slack's mrkdwn: &, < and > are escaped; <url|label> is a link.
  const text = payload.text.replace(/[&<>]/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[char]!);
  return {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: payload.runUrl ? `${text} <${payload.runUrl}|Open the run>` : text }),
  };
}
