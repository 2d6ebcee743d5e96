import type { ShopifyAdminApi } from './admin-api.ts';
import { PROCESSED_KEY, PROCESSED_NAMESPACE, type Connection, type GraphqlNode } from './refund-query.ts';

/**
 * The standard order record of Orders > Import List, in the seed's conventions (PascalCase, money
 * as numbers): what the refund export and most ERPs need to recognise an order and its refunds.
 */
const ORDER_FIELDS = `
  id legacyResourceId name createdAt updatedAt processedAt cancelledAt displayFinancialStatus currencyCode
  totalPriceSet { shopMoney { amount currencyCode } presentmentMoney { amount currencyCode } }
  tags customAttributes { key value }
  metafield(namespace: "${PROCESSED_NAMESPACE}", key: "${PROCESSED_KEY}") { id namespace key value }
  refunds { id legacyResourceId createdAt totalRefundedSet { shopMoney { amount currencyCode } presentmentMoney { amount currencyCode } } }
  transactions { id kind status gateway processedAt amountSet { shopMoney { amount currencyCode } presentmentMoney { amount currencyCode } } }`;

/** What one order of the query above costs in Shopify's points (checked by the tests against the simulator). */
export const ORDER_NODE_COST = 14;
/** Shopify refuses a query over 1000 points: the page size is lowered to fit. */
export const maxPageSize = (requested: number) => Math.max(1, Math.min(requested, Math.floor((1000 - 2) / ORDER_NODE_COST)));

export const ORDERS_QUERY = `query ImportOrders($first: Int!, $after: String, $query: String!) {
  orders(first: $first, after: $after, query: $query, sortKey: UPDATED_AT) {
    nodes { ${ORDER_FIELDS} }
    pageInfo { hasNextPage endCursor }
  }
}`;

export const orderImportDocuments = [ORDERS_QUERY];

const money = (value: GraphqlNode | null) => (value ? { Amount: Number(value.amount), CurrencyCode: value.currencyCode } : null);
const moneySet = (bag: GraphqlNode | null) => (bag ? { ShopMoney: money(bag.shopMoney), PresentmentMoney: money(bag.presentmentMoney) } : null);

export type OrderRecord = ReturnType<typeof orderRecord>;

export function orderRecord(order: GraphqlNode) {
  return {
    Id: order.id as string, LegacyResourceId: String(order.legacyResourceId), Name: order.name, CreatedAt: order.createdAt, UpdatedAt: order.updatedAt as string,
    ProcessedAt: order.processedAt, CancelledAt: order.cancelledAt ?? null, DisplayFinancialStatus: order.displayFinancialStatus ?? null,
    CurrencyCode: order.currencyCode, TotalPriceSet: moneySet(order.totalPriceSet), Tags: order.tags,
    CustomAttributes: (order.customAttributes as GraphqlNode[]).map((attribute) => ({ Key: attribute.key, Value: attribute.value ?? null })),
    Metafield: order.metafield ? { Id: order.metafield.id, Key: order.metafield.key, Value: order.metafield.value, Namespace: order.metafield.namespace } : null,
    Refunds: (order.refunds as GraphqlNode[]).map((refund) => ({
      Id: refund.id, LegacyResourceId: String(refund.legacyResourceId), CreatedAt: refund.createdAt, TotalRefundedSet: moneySet(refund.totalRefundedSet),
    })),
    Transactions: (order.transactions as GraphqlNode[]).map((transaction) => ({
      Id: transaction.id, Kind: transaction.kind, Status: transaction.status, Gateway: transaction.gateway, ProcessedAt: transaction.processedAt,
      AmountSet: moneySet(transaction.amountSet),
    })),
  };
}

/** Shopify's search syntax for the window, with the tenant's own filter ANDed. */
export function windowQuery(from: string, to: string, filter?: string) {
  const window = `updated_at:>='${from}' AND updated_at:<='${to}'`;
  return filter ? `${window} AND (${filter})` : window;
}

/** One page of orders changed in the window, in updated_at order. */
export async function ordersPage(api: ShopifyAdminApi, variables: { first: number; after: string | null; query: string }) {
  const { orders } = await api.query<{ orders: Connection }>(ORDERS_QUERY, variables);
  return { records: orders.nodes.map(orderRecord), pageInfo: orders.pageInfo };
}
