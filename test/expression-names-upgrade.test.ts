import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../engine/store/port.ts';
import type { PgDriver } from '../engine/store/sql/pg-driver.ts';
import { SqlStore } from '../engine/store/sql/sql-store.ts';
import { schemaAtVersion } from './support/stores.ts';

/**
 * Flows saved when a run bound `$error` (the failure on an error path) and `$lookup` (a data space's document) keep
 * their meaning after migration 23 names them `$failure` and `$document`: JSONata's `$error(...)`, which never
 * worked on an error path, and names that only start alike are left as they were.
 */
describe('flows saved before $failure and $document, on PostgreSQL', () => {
  const flowId = '01900000-0000-7000-8000-000000000001';
  const before = {
    key: 'orders',
    name: 'orders',
    trigger: { type: 'webhook', config: {} },
    nodes: [
      {
        id: 'report',
        operation: 'transform',
        config: {
          expression:
            '{{ {"node": $error.nodeId, "all": $error, "rate": $lookup("rates", $input.body.currency).rate, ' +
            '"code": $lookupCode, "errors": $errors} }}',
        },
      },
      { id: 'refuse', operation: 'transform', config: { expression: '{{ $error ( "no" ) }}' } },
    ],
    edges: [{ from: 'trigger', to: 'report' }],
  };
  const after = {
    ...before,
    nodes: [
      {
        ...before.nodes[0],
        config: {
          expression:
            '{{ {"node": $failure.nodeId, "all": $failure, "rate": $document("rates", $input.body.currency).rate, ' +
            '"code": $lookupCode, "errors": $errors} }}',
        },
      },
      before.nodes[1],
    ],
  };
  let drop: () => Promise<void>;
  let driver: PgDriver;
  let store: Store;

  beforeAll(async () => {
    ({ driver, drop } = await schemaAtVersion('expression_names', 22));
    await driver.query("insert into tenants (id, name) values ('t', 't')");
    await driver.query(
      `insert into flows (tenant_id, id, key, name, draft, active_version, latest_version, active)
       values ('t', $1, 'orders', 'orders', $2::jsonb, 1, 1, true)`,
      [flowId, JSON.stringify(before)],
    );
    await driver.query("insert into flow_versions (tenant_id, flow_id, version, document) values ('t', $1, 1, $2)", [
      flowId,
      JSON.stringify(before),
    ]);
    store = await SqlStore.open(driver);
  });
  afterAll(async () => {
    await store?.close();
    await drop();
  });

  it('renames the bindings in drafts and published versions, and nothing else', async () => {
    expect((await store.getFlow('t', flowId))?.draft).toEqual(after);
    expect((await store.getFlowVersion('t', flowId, 1))?.document).toEqual(after);
  });
});
