import type { Migration } from './migration.ts';

export const migration: Migration = {
  version: 15,
  name: 'message traces',
  // The trace context of the span that accepted a message (W3C traceparent), when tracing was on: every
  // run of the message, each attempt, a retry, a resume after a crash or a replay, continues that trace.
  sql: 'alter table messages add column traceparent text;',
};
