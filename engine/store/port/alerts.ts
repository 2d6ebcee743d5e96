import type { Alert, AlertChannel, AlertRule, NewAlertRule } from '../../model/index.ts';
import type { SealedValue } from '../../secrets/index.ts';

import type { Page, PageRequest } from './common.ts';

export interface NewAlertChannelRecord {
  id: string;
  name: string;
  type: AlertChannel['type'];
  /** What the API shows of its URL. */
  shownUrl: string;
  /** Its URL and, for a webhook, its signing secret, sealed (AlertChannelSecrets as JSON). */
  sealed: Pick<SealedValue, 'keyId' | 'ciphertext'>;
}

/** What a channel's sealed part holds. */
export interface AlertChannelSecrets {
  url: string;
  /** A webhook's signing secret (`whsec_...`). */
  secret?: string;
}

/** A rule as the workers check it: with where its counting stands. */
export interface CheckedAlertRule extends AlertRule {
  tenantId: string;
  /** What happened after this is not in any alert yet (a timestamp as the store writes it, kept exact). */
  countedUntil: string;
}

/** What a rule's condition found since it last counted. */
export interface AlertFinding {
  count: number;
  /** Where counting stands once this is reported (as the store writes it). */
  countedUntil: string;
  sample: Alert['sample'];
}

/** A channel as it is sent to: its sealed part (AlertChannelSecrets) with its id and type. */
export interface SealedAlertChannel {
  id: string;
  type: AlertChannel['type'];
  sealed: Pick<SealedValue, 'keyId' | 'ciphertext'>;
}

/** An alert's delivery to one channel, leased to the worker that sends it. */
export interface LeasedAlertDelivery {
  tenantId: string;
  alert: Omit<Alert, 'deliveries'> & { ruleName: string };
  channelId: string;
  /** Null when the channel was deleted since. */
  channel: SealedAlertChannel | null;
  /** This attempt's number (1 for the first). */
  attempt: number;
}

/** Alert channels and rules, the alerts they made, and their delivery (an outbox in the store). */
export interface AlertStore {
  /** ConflictError past MAX_ALERT_CHANNELS. */
  createAlertChannel(tenantId: string, channel: NewAlertChannelRecord): Promise<AlertChannel>;
  listAlertChannels(tenantId: string, page: PageRequest): Promise<Page<AlertChannel>>;
  getAlertChannel(tenantId: string, id: string): Promise<AlertChannel | undefined>;
  getSealedAlertChannel(tenantId: string, id: string): Promise<SealedAlertChannel | undefined>;
  deleteAlertChannel(tenantId: string, id: string): Promise<boolean>;
  /** ConflictError past MAX_ALERT_RULES. */
  createAlertRule(tenantId: string, id: string, rule: Required<NewAlertRule>): Promise<AlertRule>;
  /** Replaces a rule's settings; its counting goes on where it was. */
  replaceAlertRule(tenantId: string, id: string, rule: Required<NewAlertRule>): Promise<AlertRule | undefined>;
  listAlertRules(tenantId: string, page: PageRequest): Promise<Page<AlertRule>>;
  getAlertRule(tenantId: string, id: string): Promise<AlertRule | undefined>;
  deleteAlertRule(tenantId: string, id: string): Promise<boolean>;
  /** Alerts made, newest first, with their deliveries. */
  listAlerts(tenantId: string, page: PageRequest): Promise<Page<Alert>>;
  /** Deletes alerts made before `before` that are no longer being sent (a retention sweep); how many. */
  pruneAlerts(before: string): Promise<number>;

  /**
   * Enabled rules of any tenant not checked in the last `intervalMs`, at most `limit`, marked checked now (a
   * worker's sweep: others skip them).
   */
  claimAlertRules(intervalMs: number, limit: number): Promise<CheckedAlertRule[]>;
  /** What the rule's condition finds that no alert has reported yet. */
  findAlertable(rule: CheckedAlertRule): Promise<AlertFinding>;
  /**
   * Records an alert of the rule with a pending delivery to each of its channels, and moves its counting to
   * `finding.countedUntil`, in one statement, only if its counting still stands where `rule` says (another
   * worker did not report it meanwhile). Returns whether it was recorded.
   */
  recordAlert(rule: CheckedAlertRule, alert: { id: string; text: string }, finding: AlertFinding): Promise<boolean>;
  /** Due pending deliveries of any tenant, at most `limit`, each leased for `leaseMs`, its attempt counted. */
  leaseAlertDeliveries(leaseMs: number, limit: number): Promise<LeasedAlertDelivery[]>;
  /** A leased delivery sent, or failed: retried at `retryAt`, or given up (no `retryAt`). */
  settleAlertDelivery(
    delivery: Pick<LeasedAlertDelivery, 'tenantId' | 'attempt' | 'channelId'> & { alertId: string },
    outcome: { sent: true } | { sent: false; error: string; retryAt?: Date },
  ): Promise<void>;
}
