import {
  type Alert,
  type AlertChannel,
  type AlertRule,
  ConflictError,
  MAX_ALERT_CHANNELS,
  MAX_ALERT_RULES,
  type NewAlertRule,
} from '../../../model/index.ts';
import type {
  AlertFinding,
  AlertStore,
  CheckedAlertRule,
  LeasedAlertDelivery,
  NewAlertChannelRecord,
} from '../../port/alerts.ts';
import type { PageRequest } from '../../port/common.ts';
import type { SqlDriver } from '../driver.ts';
import { decodeCursor, iso, isoOrNull, isUuid, json, page, type Row, UUID } from './rows.ts';

const toChannel = (r: Row): AlertChannel => ({
  id: r.id,
  name: r.name,
  type: r.type,
  url: r.shown_url,
  createdAt: iso(r.created_at),
});

const toRule = (r: Row): AlertRule => ({
  id: r.id,
  name: r.name,
  enabled: r.enabled,
  channelIds: r.channel_ids,
  condition: r.condition,
  cooldownSeconds: r.cooldown_seconds,
  createdAt: iso(r.created_at),
  checkedAt: isoOrNull(r.checked_at),
  lastAlertAt: isoOrNull(r.last_alert_at),
});

const toCheckedRule = (r: Row): CheckedAlertRule => ({
  ...toRule(r),
  tenantId: r.tenant_id,
  // As PostgreSQL writes it, to the microsecond: recordAlert compares it for equality.
  countedUntil: r.counted_until_text,
});

const toAlert = (r: Row): Omit<Alert, 'deliveries'> => ({
  id: r.id,
  ruleId: r.rule_id,
  kind: r.kind,
  count: r.count,
  text: r.text,
  sample: r.sample,
  createdAt: iso(r.created_at),
});

/**
 * A run that fails is counted once it is this old: a run's end is stamped when its statement starts, so a
 * later count cannot find one that committed after an earlier count with an older stamp.
 */
const SETTLED = "interval '2 seconds'";

/** The latest run a finding reports, with its flow's key: never its body or error message. */
const SAMPLE = (runs: string) => `(select jsonb_strip_nulls(jsonb_build_object('runId', s.id, 'flowId', s.flow_id,
    'flowKey', f.key, 'errorKind', s.error->>'kind', 'node', s.error->>'node'))
    from ${runs} s join flows f on f.tenant_id = s.tenant_id and f.id = s.flow_id order by s.at desc limit 1)`;

/** Alert channels and rules, their alerts and deliveries: the outbox the workers send from. */
export class SqlAlerts implements AlertStore {
  constructor(private readonly db: SqlDriver) {}

  async createAlertChannel(tenantId: string, channel: NewAlertChannelRecord) {
    const [row] = await this.db.query(
      `insert into alert_channels (tenant_id, id, name, type, shown_url, sealed)
       select $1, $2, $3, $4, $5, $6::jsonb
        where (select count(*) from alert_channels where tenant_id = $1) < $7
       returning *`,
      [tenantId, channel.id, channel.name, channel.type, channel.shownUrl, json(channel.sealed), MAX_ALERT_CHANNELS],
    );
    if (!row) throw new ConflictError(`a tenant has at most ${MAX_ALERT_CHANNELS} alert channels`);
    return toChannel(row);
  }

  async listAlertChannels(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `select * from alert_channels where tenant_id = $1 and ($2::uuid is null or id > $2::uuid) order by id limit $3`,
      [tenantId, decodeCursor(request.after, UUID), request.first + 1],
    );
    return page(rows, request, toChannel, (r) => r.id);
  }

  async getAlertChannel(tenantId: string, id: string) {
    if (!isUuid(id)) return undefined;
    const [row] = await this.db.query('select * from alert_channels where tenant_id = $1 and id = $2', [tenantId, id]);
    return row ? toChannel(row) : undefined;
  }

  async getSealedAlertChannel(tenantId: string, id: string) {
    if (!isUuid(id)) return undefined;
    const [row] = await this.db.query('select id, type, sealed from alert_channels where tenant_id = $1 and id = $2', [
      tenantId,
      id,
    ]);
    return row ? { id: row.id as string, type: row.type, sealed: row.sealed } : undefined;
  }

  async deleteAlertChannel(tenantId: string, id: string) {
    if (!isUuid(id)) return false;
    const rows = await this.db.query('delete from alert_channels where tenant_id = $1 and id = $2 returning id', [
      tenantId,
      id,
    ]);
    return rows.length > 0;
  }

  async createAlertRule(tenantId: string, id: string, rule: Required<NewAlertRule>) {
    const [row] = await this.db.query(
      `insert into alert_rules (tenant_id, id, name, enabled, channel_ids, condition, cooldown_seconds)
       select $1, $2, $3, $4, $5::uuid[], $6::jsonb, $7
        where (select count(*) from alert_rules where tenant_id = $1) < $8
       returning *`,
      [
        tenantId,
        id,
        rule.name,
        rule.enabled,
        rule.channelIds,
        json(rule.condition),
        rule.cooldownSeconds,
        MAX_ALERT_RULES,
      ],
    );
    if (!row) throw new ConflictError(`a tenant has at most ${MAX_ALERT_RULES} alert rules`);
    return toRule(row);
  }

  async replaceAlertRule(tenantId: string, id: string, rule: Required<NewAlertRule>) {
    if (!isUuid(id)) return undefined;
    const [row] = await this.db.query(
      `update alert_rules set name = $3, enabled = $4, channel_ids = $5::uuid[], condition = $6::jsonb,
         cooldown_seconds = $7
        where tenant_id = $1 and id = $2 returning *`,
      [tenantId, id, rule.name, rule.enabled, rule.channelIds, json(rule.condition), rule.cooldownSeconds],
    );
    return row ? toRule(row) : undefined;
  }

  async listAlertRules(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `select * from alert_rules where tenant_id = $1 and ($2::uuid is null or id > $2::uuid) order by id limit $3`,
      [tenantId, decodeCursor(request.after, UUID), request.first + 1],
    );
    return page(rows, request, toRule, (r) => r.id);
  }

  async getAlertRule(tenantId: string, id: string) {
    if (!isUuid(id)) return undefined;
    const [row] = await this.db.query('select * from alert_rules where tenant_id = $1 and id = $2', [tenantId, id]);
    return row ? toRule(row) : undefined;
  }

  async deleteAlertRule(tenantId: string, id: string) {
    if (!isUuid(id)) return false;
    const rows = await this.db.query('delete from alert_rules where tenant_id = $1 and id = $2 returning id', [
      tenantId,
      id,
    ]);
    return rows.length > 0;
  }

  async listAlerts(tenantId: string, request: PageRequest) {
    const rows = await this.db.query(
      `select a.*, coalesce((select jsonb_agg(jsonb_build_object('channelId', d.channel_id, 'status', d.status,
           'attempts', d.attempts, 'lastError', d.last_error, 'sentAt', d.sent_at) order by d.channel_id)
           from alert_deliveries d where d.tenant_id = a.tenant_id and d.alert_id = a.id), '[]') as deliveries
         from alerts a where a.tenant_id = $1 and ($2::uuid is null or a.id < $2::uuid) order by a.id desc limit $3`,
      [tenantId, decodeCursor(request.after, UUID), request.first + 1],
    );
    return page(
      rows,
      request,
      (r): Alert => ({
        ...toAlert(r),
        deliveries: (r.deliveries as Row[]).map(
          (d) => ({ ...d, sentAt: isoOrNull(d.sentAt) }) as Alert['deliveries'][0],
        ),
      }),
      (r) => r.id,
    );
  }

  async pruneAlerts(before: string) {
    const [row] = await this.db.query(
      `with gone as (delete from alerts a where a.created_at < $1 and not exists (select 1 from alert_deliveries d
         where d.tenant_id = a.tenant_id and d.alert_id = a.id and d.status = 'pending') returning 1)
       select count(*) as n from gone`,
      [before],
    );
    return Number(row.n);
  }

  async claimAlertRules(intervalMs: number, limit: number) {
    const rows = await this.db.query(
      `update alert_rules r set checked_at = now()
         from (select tenant_id, id from alert_rules
                where enabled and (checked_at is null or checked_at <= now() - $1 * interval '1 millisecond')
                order by checked_at nulls first limit $2 for update skip locked) due
        where r.tenant_id = due.tenant_id and r.id = due.id
       returning r.*, r.counted_until::text as counted_until_text`,
      [intervalMs, limit],
    );
    return rows.map(toCheckedRule);
  }

  async findAlertable(rule: CheckedAlertRule): Promise<AlertFinding> {
    const { condition } = rule;
    const flows = 'flowIds' in condition && condition.flowIds ? condition.flowIds : null;
    if (condition.kind === 'message-held') {
      // Messages held past the age, not reported yet: each is reported once.
      const [row] = await this.db.query(
        `with held as (select r.tenant_id, r.id, r.flow_id, null::jsonb as error, r.created_at as at from runs r
            where r.tenant_id = $1 and r.status = 'held' and r.created_at > $2
              and r.created_at <= now() - $3 * interval '1 second')
         select (select count(*)::integer from held) as n, (select max(at)::text from held) as upto,
                ${SAMPLE('held')} as sample`,
        [rule.tenantId, rule.countedUntil, condition.olderThanSeconds],
      );
      return { count: row.n, countedUntil: row.upto ?? rule.countedUntil, sample: row.sample };
    }
    // Failed (and handled, when the rule counts them) runs since counting stood (and, for a rate, within its window),
    // of the rule's flows.
    const [row] = await this.db.query(
      `with bounds as (select greatest($2::timestamptz, coalesce(now() - $4 * interval '1 second', $2::timestamptz))
           as after, now() - ${SETTLED} as upto),
       failed as (select r.tenant_id, r.id, r.flow_id, r.error, r.finished_at as at from runs r, bounds b
          where r.tenant_id = $1 and (r.status = 'failed' or ($5 and r.status = 'handled'))
            and r.finished_at > b.after and r.finished_at <= b.upto
            and ($3::uuid[] is null or r.flow_id = any($3::uuid[])))
       select (select count(*)::integer from failed) as n, (select upto::text from bounds) as upto,
              ${SAMPLE('failed')} as sample`,
      [
        rule.tenantId,
        rule.countedUntil,
        flows,
        condition.kind === 'failure-rate' ? condition.windowSeconds : null,
        // Planned for each call's values: without handled runs, the plan is that of failed ones alone.
        condition.includeHandled === true,
      ],
    );
    return { count: row.n, countedUntil: row.upto, sample: row.sample };
  }

  async recordAlert(rule: CheckedAlertRule, alert: { id: string; text: string }, finding: AlertFinding) {
    const rows = await this.db.query(
      `with moved as (
         update alert_rules set counted_until = $4::timestamptz, last_alert_at = now()
          where tenant_id = $1 and id = $2 and counted_until = $3::timestamptz returning *),
       made as (
         insert into alerts (tenant_id, id, rule_id, kind, count, text, sample)
         select $1, $5, moved.id, $6, $7, $8, $9::jsonb from moved returning *)
       insert into alert_deliveries (tenant_id, alert_id, channel_id)
       select $1, made.id, c.id from made cross join moved
         join alert_channels c on c.tenant_id = $1 and c.id = any(moved.channel_ids)
       returning alert_id`,
      [
        rule.tenantId,
        rule.id,
        rule.countedUntil,
        finding.countedUntil,
        alert.id,
        rule.condition.kind,
        finding.count,
        alert.text,
        json(finding.sample),
      ],
    );
    return rows.length > 0;
  }

  async leaseAlertDeliveries(leaseMs: number, limit: number): Promise<LeasedAlertDelivery[]> {
    const rows = await this.db.query(
      // Tenants take turns: each one's earliest due delivery first, then each one's second, and so on, so that one
      // tenant's flood of alerts to a receiver that hangs never holds up another tenant's.
      `with due as (
         select tenant_id, alert_id, channel_id, next_at,
                row_number() over (partition by tenant_id order by next_at) as turn
           from alert_deliveries
          where status = 'pending' and next_at <= now() and (lease_until is null or lease_until <= now())),
       chosen as (
         select d.tenant_id, d.alert_id, d.channel_id
           from alert_deliveries d
           join (select * from due order by turn, next_at limit $2) c
             on d.tenant_id = c.tenant_id and d.alert_id = c.alert_id and d.channel_id = c.channel_id
          where d.status = 'pending' and (d.lease_until is null or d.lease_until <= now())
            for update of d skip locked),
       leased as (
         update alert_deliveries d set lease_until = now() + $1 * interval '1 millisecond', attempts = d.attempts + 1
           from chosen
          where d.tenant_id = chosen.tenant_id and d.alert_id = chosen.alert_id and d.channel_id = chosen.channel_id
         returning d.*)
       select l.tenant_id, l.attempts, l.channel_id, to_jsonb(a.*) as alert, r.name as rule_name,
              c.type as channel_type, c.sealed as channel_sealed
         from leased l join alerts a on a.tenant_id = l.tenant_id and a.id = l.alert_id
         left join alert_rules r on r.tenant_id = a.tenant_id and r.id = a.rule_id
         left join alert_channels c on c.tenant_id = l.tenant_id and c.id = l.channel_id`,
      [leaseMs, limit],
    );
    return rows.map((r) => ({
      tenantId: r.tenant_id,
      alert: { ...toAlert(r.alert), ruleName: r.rule_name ?? '(deleted rule)' },
      channelId: r.channel_id,
      channel: r.channel_type ? { id: r.channel_id, type: r.channel_type, sealed: r.channel_sealed } : null,
      attempt: r.attempts,
    }));
  }

  async settleAlertDelivery(
    delivery: Pick<LeasedAlertDelivery, 'tenantId' | 'attempt' | 'channelId'> & { alertId: string },
    outcome: { sent: true } | { sent: false; error: string; retryAt?: Date },
  ) {
    // Only the lease holder's attempt settles it: one that outlived its lease leaves it to the next.
    await this.db.query(
      `update alert_deliveries set lease_until = null,
         status = case when $5 then 'sent' when $7::timestamptz is null then 'failed' else 'pending' end,
         sent_at = case when $5 then now() end, last_error = $6, next_at = coalesce($7::timestamptz, next_at)
        where tenant_id = $1 and alert_id = $2 and channel_id = $3 and attempts = $4 and status = 'pending'`,
      [
        delivery.tenantId,
        delivery.alertId,
        delivery.channelId,
        delivery.attempt,
        outcome.sent,
        outcome.sent ? null : outcome.error,
        outcome.sent ? null : (outcome.retryAt?.toISOString() ?? null),
      ],
    );
  }
}
