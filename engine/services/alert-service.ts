import { AlertSender, newWebhookSecret } from '../alerts/index.ts';
import {
  type Alert,
  type AlertChannel,
  type AlertRule,
  type NewAlertChannel,
  type NewAlertRule,
  newId,
  NotFoundError,
  ValidationError,
} from '../model/index.ts';
import type { HttpClient } from '../outbound/index.ts';
import { alertChannelContext, type Keyring } from '../secrets/index.ts';
import type { Page, PageRequest, Store } from '../store/index.ts';
import { found, type Reference, requireOwned } from './references.ts';

/** How long a test alert may take to be answered. */
export const ALERT_TEST_TIMEOUT_MS = 10_000;

/** How a channel answered a test alert. */
export type AlertTestOutcome = { sent: true; status: number } | { sent: false; error: string };

/**
 * What a tenant does with alerts: channels (a signed webhook, a Slack-style webhook) added, tested and removed,
 * rules (a run failed, failures in a window, a message held) that name them. The workers check and send.
 */
export class AlertService {
  private readonly sender: AlertSender;

  constructor(
    private readonly store: Store,
    private readonly keyring: Keyring,
    private readonly http: HttpClient,
  ) {
    this.sender = new AlertSender(keyring, http, ALERT_TEST_TIMEOUT_MS);
  }

  /** A channel whose URL is kept sealed; a webhook's comes with its signing secret, which is shown this once. */
  async addChannel(tenantId: string, input: NewAlertChannel): Promise<AlertChannel & { secret?: string }> {
    const refusal = this.http.urlRefusal(input.url);
    if (refusal) throw new ValidationError('Invalid alert channel', [{ path: '$.url', message: refusal }]);
    const id = newId();
    const secret = input.type === 'webhook' ? newWebhookSecret() : undefined;
    const channel = await this.store.createAlertChannel(tenantId, {
      id,
      name: input.name,
      type: input.type,
      shownUrl: shownUrl(input.type, input.url),
      sealed: this.keyring.seal(JSON.stringify({ url: input.url, secret }), alertChannelContext(tenantId, id)),
    });
    return secret ? { ...channel, secret } : channel;
  }

  listChannels(tenantId: string, page: PageRequest): Promise<Page<AlertChannel>> {
    return this.store.listAlertChannels(tenantId, page);
  }

  async getChannel(tenantId: string, id: string): Promise<AlertChannel> {
    return found(`alert channel ${id}`, await this.store.getAlertChannel(tenantId, id));
  }

  /** An `alert.test` alert sent to the channel now, not kept or retried: how it was answered. */
  async testChannel(tenantId: string, id: string): Promise<AlertTestOutcome> {
    const channel = found(`alert channel ${id}`, await this.store.getSealedAlertChannel(tenantId, id));
    const outcome = await this.sender.send(tenantId, channel, {
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
    return outcome.sent ? { sent: true, status: outcome.status } : { sent: false, error: outcome.error };
  }

  /** The channel gone; its pending alerts are not sent. */
  async deleteChannel(tenantId: string, id: string): Promise<void> {
    if (!(await this.store.deleteAlertChannel(tenantId, id))) throw new NotFoundError(`no alert channel ${id}`);
  }

  /** A rule over the tenant's own channels and flows, counting what happens from now on. */
  async addRule(tenantId: string, rule: Required<NewAlertRule>): Promise<AlertRule> {
    await this.requireReferences(tenantId, rule);
    return this.store.createAlertRule(tenantId, newId(), rule);
  }

  /** The rule replaced; its counting goes on where it was. */
  async replaceRule(tenantId: string, id: string, rule: Required<NewAlertRule>): Promise<AlertRule> {
    await this.requireReferences(tenantId, rule);
    return found(`alert rule ${id}`, await this.store.replaceAlertRule(tenantId, id, rule));
  }

  listRules(tenantId: string, page: PageRequest): Promise<Page<AlertRule>> {
    return this.store.listAlertRules(tenantId, page);
  }

  async getRule(tenantId: string, id: string): Promise<AlertRule> {
    return found(`alert rule ${id}`, await this.store.getAlertRule(tenantId, id));
  }

  async deleteRule(tenantId: string, id: string): Promise<void> {
    if (!(await this.store.deleteAlertRule(tenantId, id))) throw new NotFoundError(`no alert rule ${id}`);
  }

  /** The alerts sent, newest first, with their delivery to each channel. */
  listAlerts(tenantId: string, page: PageRequest): Promise<Page<Alert>> {
    return this.store.listAlerts(tenantId, page);
  }

  private requireReferences(tenantId: string, rule: NewAlertRule) {
    const flowIds = ('flowIds' in rule.condition && rule.condition.flowIds) || [];
    const references: Reference[] = [
      ...rule.channelIds.map((id, index) => ({ kind: 'alertChannel' as const, id, path: `$.channelIds[${index}]` })),
      ...flowIds.map((id, index) => ({ kind: 'flow' as const, id, path: `$.condition.flowIds[${index}]` })),
    ];
    return requireOwned(this.store, tenantId, references, 'the alert rule names what this tenant does not have');
  }
}

/**
 * What the API shows of a channel's URL: a Slack webhook's origin only (its path is the credential), a
 * webhook's without its query (which may carry a token).
 */
function shownUrl(type: string, text: string): string {
  const url = new URL(text);
  return type === 'slack' ? `${url.origin}/…` : `${url.origin}${url.pathname}${url.search ? '?…' : ''}`;
}
