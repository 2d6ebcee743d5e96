import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 17,
  name: 'alerts',
  // Alerts are kept and sent from the store (an outbox): a crash or a Redis that loses its data loses none.
  // A rule counts what happened after `counted_until`, so each failure is reported once; a delivery is
  // leased while it is sent, and one whose sender died is sent again (with the same id) when the lease ends.
  sql: `create table alert_channels (
      tenant_id text not null references tenants (id) on delete cascade,
      id uuid not null,
      name text not null,
      type text not null,
      shown_url text not null,
      sealed jsonb not null,
      created_at timestamptz not null default now(),
      primary key (tenant_id, id));
    create table alert_rules (
      tenant_id text not null references tenants (id) on delete cascade,
      id uuid not null,
      name text not null,
      enabled boolean not null,
      channel_ids uuid[] not null,
      condition jsonb not null,
      cooldown_seconds integer not null,
      created_at timestamptz not null default now(),
      checked_at timestamptz,
      counted_until timestamptz not null default now(),
      last_alert_at timestamptz,
      primary key (tenant_id, id));
    create index alert_rules_due on alert_rules (checked_at nulls first) where enabled;
    create table alerts (
      tenant_id text not null references tenants (id) on delete cascade,
      id uuid not null,
      rule_id uuid not null,
      kind text not null,
      count integer not null,
      text text not null,
      sample jsonb,
      created_at timestamptz not null default now(),
      primary key (tenant_id, id));
    create table alert_deliveries (
      tenant_id text not null,
      alert_id uuid not null,
      channel_id uuid not null,
      status text not null default 'pending',
      attempts integer not null default 0,
      next_at timestamptz not null default now(),
      lease_until timestamptz,
      last_error text,
      sent_at timestamptz,
      primary key (tenant_id, alert_id, channel_id),
      foreign key (tenant_id, alert_id) references alerts (tenant_id, id) on delete cascade);
    create index alert_deliveries_due on alert_deliveries (next_at) where status = 'pending';
    create index runs_failed_by_finish on runs (tenant_id, finished_at) where status = 'failed';`,
};
