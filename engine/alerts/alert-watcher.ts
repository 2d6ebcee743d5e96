import type { Logger } from 'pino';
import { newId } from '../model/index.ts';
import type { HttpClient } from '../outbound/index.ts';
import { SingleFlight } from '../redis/index.ts';
import type { Keyring } from '../secrets/index.ts';
import type { AlertStore, CheckedAlertRule, LeasedAlertDelivery } from '../store/index.ts';
import { alertPayload, alertText } from './alert-message.ts';
import { AlertSender } from './alert-sender.ts';

/** Attempts at one delivery before it is given up (spread over about 1.5 hours). */
export const MAX_ALERT_ATTEMPTS = 10;
/** Rules checked, and deliveries sent, in one look of one worker. */
const RULES_PER_LOOK = 50;
const DELIVERIES_PER_LOOK = 20;

export interface AlertWatcherOptions {
  store: AlertStore;
  keyring: Keyring;
  /** Outbound HTTP with the deployment's address policy, as `http.request` has it. */
  http: HttpClient;
  logger: Logger;
  /** How often each rule is checked (ALERT_CHECK_INTERVAL_MS). */
  checkEveryMs: number;
  /** How long one delivery may take (ALERT_TIMEOUT_MS); its lease is twice that. */
  timeoutMs: number;
  /** A link to a run's page for whoever reads an alert. */
  runUrl(tenantId: string, runId: string): string | undefined;
}

/**
 * Turns what tenants' alert rules find into alerts and sends them, in every worker process. The store
 * is the queue (an outbox): rules are claimed by one worker at a time, an alert is recorded with its
 * deliveries in one statement that also moves the rule's counting on (so a failure is reported once),
 * and a delivery is leased while it is sent; one whose worker died is sent again, with the same
 * `webhook-id`, when its lease ends. Failed sends are retried with backoff, MAX_ALERT_ATTEMPTS times.
 */
export class AlertWatcher {
  private timer?: NodeJS.Timeout;
  private readonly looks = new SingleFlight(
    () => this.lookOnce(),
    (error) => this.options.logger.warn({ err: error }, 'could not check or send alerts'),
  );

  private readonly sender: AlertSender;

  constructor(private readonly options: AlertWatcherOptions) {
    this.sender = new AlertSender(options.keyring, options.http, options.timeoutMs);
  }

  start() {
    this.timer = setInterval(() => void this.look(), Math.min(1000, this.options.checkEveryMs)).unref();
  }

  async close() {
    clearInterval(this.timer);
    await this.looks.settled();
  }

  look(): Promise<void> {
    return this.looks.run();
  }

  private async lookOnce() {
    const { store, checkEveryMs, timeoutMs } = this.options;
    for (const rule of await store.claimAlertRules(checkEveryMs, RULES_PER_LOOK)) await this.check(rule);
    const leased = await store.leaseAlertDeliveries(timeoutMs * 2, DELIVERIES_PER_LOOK);
    await Promise.all(leased.map((delivery) => this.deliver(delivery)));
  }

  /** Records an alert when the rule's condition holds and its cooldown is over; else its counting stays. */
  private async check(rule: CheckedAlertRule) {
    const { store } = this.options;
    const finding = await store.findAlertable(rule);
    const threshold = rule.condition.kind === 'failure-rate' ? rule.condition.failures : 1;
    if (finding.count < threshold) return;
    if (rule.lastAlertAt && Date.parse(rule.lastAlertAt) + rule.cooldownSeconds * 1000 > Date.now()) return;
    await store.recordAlert(rule, { id: newId(), text: alertText(rule, finding) }, finding);
  }

  private async deliver(delivery: LeasedAlertDelivery) {
    const { store, logger } = this.options;
    const { tenantId, alert, channel, channelId } = delivery;
    const settled = { tenantId, attempt: delivery.attempt, alertId: alert.id, channelId };
    if (!channel) return store.settleAlertDelivery(settled, { sent: false, error: 'the channel was deleted' });
    const runUrl = alert.sample ? this.options.runUrl(tenantId, alert.sample.runId) : undefined;
    const outcome = await this.sender.send(tenantId, channel, alertPayload(delivery, runUrl));
    if (outcome.sent) return store.settleAlertDelivery(settled, { sent: true });
    const { error } = outcome;
    const retryAt =
      outcome.permanent || delivery.attempt >= MAX_ALERT_ATTEMPTS
        ? undefined
        : new Date(Date.now() + backoffMs(delivery.attempt));
    logger.warn({ tenantId, alertId: alert.id, channelId, attempt: delivery.attempt, error }, 'alert not sent');
    await store.settleAlertDelivery(settled, { sent: false, error, retryAt });
  }
}

/** 5 s, doubling, at most 30 minutes, with jitter: a receiver that is down is not hammered. */
function backoffMs(attempt: number): number {
  const delay = Math.min(5000 * 2 ** (attempt - 1), 30 * 60_000);
  return delay / 2 + Math.random() * (delay / 2);
}
