import { later, toOperationError } from '../../engine/model/index.ts';
import { defineOperation } from '../../engine/plugins/index.ts';
import { openShop, shopifyConfigSchema } from './destination.ts';
import {
  countOrders,
  maxPageSize,
  nextPageSize,
  optionalOrderFields,
  ordersPage,
  windowQuery,
} from './order-record.ts';

const FIELD = 'updated_at';
/** How long the poll waits before it looks at its tasks again. */
const TASK_CHECK_MS = 1000;

/**
 * Orders > Import List: the refund operation's successor. A poll reads the orders changed since
 * the flow's incremental field (minus an overlap, for ties and late writes) up to now, page by
 * page, and hands each to the rest of the flow as a batch task (deduplicated on id and
 * updatedAt). Only when every task has settled does the field move to the end of the window, so a
 * crash or a failure re-reads the same window and the idempotent next steps drop repeats.
 */
export const ordersImportList = defineOperation({
  name: 'shopify.orders-import-list',
  title: 'Orders > Import List',
  description:
    "Polls the shop for orders updated since the last poll (the flow's incremental field updated_at, minus the " +
    'overlap) and runs the nodes after it once per order, as the tasks of a batch. The field advances when every ' +
    'task has settled.',
  version: '1.0.0',
  sideEffects: false,
  fanOut: true,
  configSchema: shopifyConfigSchema({
    query: {
      type: 'string',
      maxLength: 1000,
      description: 'A Shopify order search filter ANDed with the window, e.g. "financial_status:paid".',
    },
    fields: {
      type: 'array',
      uniqueItems: true,
      items: { enum: optionalOrderFields },
      default: [],
      description:
        'Optional parts of the order record beside the standard ones: lineItems (the first 10, as a connection), ' +
        'shippingAddress, customer. Each costs query points.',
    },
    pageSize: {
      type: 'integer',
      minimum: 1,
      maximum: 250,
      default: 50,
      description:
        'The most orders per query: a poll counts the orders of its window first (one point) and asks for no more ' +
        "than that; lowered to what fits Shopify's 1000-point limit per query (71 for the standard record, 11 with " +
        'lineItems).',
    },
    overlapMinutes: {
      type: 'integer',
      minimum: 0,
      maximum: 1440,
      default: 5,
      description: 'How far before the incremental field a poll re-reads, when the field sets none.',
    },
    initialLookbackHours: {
      type: 'integer',
      minimum: 1,
      maximum: 1440,
      default: 24,
      description: 'Where the first poll starts (Shopify shows 60 days of orders without read_all_orders).',
    },
    maxPendingTasks: {
      type: 'integer',
      minimum: 1,
      maximum: 10_000,
      default: 200,
      description: 'The import pauses while this many of its tasks are unfinished.',
    },
  }),
  async run(ctx) {
    const { config } = ctx;
    const { api } = await openShop(ctx, config.destination);
    const window = await ctx.step('window', async () => {
      const field = await ctx.incrementalField.get();
      const overlapMs = field?.overlapMs ?? (config.overlapMinutes ?? 5) * 60_000;
      const start = field?.value
        ? Date.parse(field.value) - overlapMs
        : Date.now() - (config.initialLookbackHours ?? 24) * 3_600_000;
      return { from: new Date(start).toISOString(), to: new Date().toISOString(), overlapMs };
    });
    const batch = await ctx.batch(window);
    const query = windowQuery(window.from, window.to, config.query);
    const fields = config.fields ?? [];
    const maxSize = maxPageSize(config.pageSize ?? 50, fields);
    // A refusal that no retry changes ends the batch; the field stays, so the next poll reads the window again.
    const failBatchIfPermanent = async (error: unknown): Promise<never> => {
      if (toOperationError(error).kind === 'permanent') await batch.setStatus('failed');
      throw error;
    };
    // Shopify charges a page for the orders it asks for, not those that come: pages ask for what the window holds.
    const counted = await ctx.step('count', () => countOrders(api, query).catch(failBatchIfPermanent));

    // Each page is a memoized step: a later pass resumes after the last page read, and memory holds one page.
    let after: string | null = null;
    let found = 0;
    for (let number = 0; ; number++) {
      const first = nextPageSize(maxSize, counted, found);
      const page = await ctx.step(`page-${number}`, async () => {
        const { records, pageInfo } = await ordersPage(api, fields, { first, after, query }).catch(
          failBatchIfPermanent,
        );
        // One task per order in a batch: Shopify's updated_at has whole seconds, so an order changed in the
        // second the poll started (after it) can come again on a later page; the next poll reads its new state.
        const added = await batch.add(records.map((record) => ({ key: record.Id, item: record })));
        ctx.logger.info(
          { page: number, orders: records.length, newTasks: added },
          `page ${number}: ${records.length} orders`,
        );
        return { count: records.length, ...pageInfo };
      });
      found += page.count;
      if (!page.hasNextPage) break;
      after = page.endCursor;
      const counts = await batch.counts();
      if (counts.unfinished >= (config.maxPendingTasks ?? 200)) {
        throw later(`${counts.unfinished} tasks unfinished: importing more after they settle`, {
          retryAfterMs: TASK_CHECK_MS,
        });
      }
    }

    await batch.setStatus('running');
    const counts = await batch.counts();
    ctx.progress(counts.progress);
    if (counts.unfinished > 0)
      throw later(`waiting for ${counts.unfinished} of ${counts.total} tasks`, { retryAfterMs: TASK_CHECK_MS });
    await ctx.step('advance', () =>
      ctx.incrementalField.set({ field: FIELD, value: window.to, overlapMs: window.overlapMs }),
    );
    ctx.logger.info({ counts, to: window.to }, `${counts.total} orders imported; the next poll starts at ${window.to}`);
    await batch.setStatus(counts.failed > 0 ? 'failed' : 'succeeded');
    return { batchId: batch.id, window, counts };
  },
});
