import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 4,
  name: 'tenant suspension, message topics, blocked topics',
  sql: `
    alter table tenants add column suspended_reason text, add column suspended_at timestamptz;
    -- A repeated delivery is recorded too (without its body), pointing at the first.
    alter table messages add column topic text, add column duplicate_of uuid;
    -- Set while a run is 'held': 'suspended' (its tenant) or 'topic' (its message's topic is blocked).
    alter table runs add column held_by text;
    create index runs_by_message on runs (tenant_id, message_id);
    create index messages_by_topic on messages (tenant_id, topic, id desc);
    create table blocked_topics (
      tenant_id text not null references tenants(id) on delete cascade,
      topic text not null,
      reason text,
      blocked_at timestamptz not null default now(),
      primary key (tenant_id, topic)
    );
  `,
};
