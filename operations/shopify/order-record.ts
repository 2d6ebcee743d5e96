import type { ShopifyAdminApi } from './admin-api.ts';
import { largestPage, requestedCost } from './query-cost.ts';
import { PROCESSED_KEY, PROCESSED_NAMESPACE, type Connection, type GraphqlNode } from './refund-query.ts';

/**
 * The standard order record of Orders > Import List, in the Refund record's conventions (PascalCase, money
 * as numbers): what the refund export and most ERPs need to recognise an order and its refunds.
 */
const STANDARD_FIELDS = `
  id legacyResourceId name createdAt updatedAt processedAt cancelledAt displayFinancialStatus currencyCode
  totalPriceSet { ...Money }
  tags customAttributes { key value }
  metafield(namespace: "${PROCESSED_NAMESPACE}", key: "${PROCESSED_KEY}") { id namespace key value }
  refunds { id legacyResourceId createdAt totalRefundedSet { ...Money } }
  transactions { id kind status gateway processedAt amountSet { ...Money } }`;

/** Line items imported per order (a connection: `PageInfo.HasNextPage` tells when an order has more). */
export const LINE_ITEMS_PER_ORDER = 10;

/** Optional parts of the record, each with its GraphQL. */
const optionalFields = {
  lineItems:
    `lineItems(first: ${LINE_ITEMS_PER_ORDER}) { nodes { id sku title quantity originalUnitPriceSet { ` +
    '...Money } discountedTotalSet { ...Money } } pageInfo { hasNextPage endCursor } }',
  shippingAddress: 'shippingAddress { city provinceCode zip countryCodeV2 }',
  customer: 'customer { id displayName }',
} as const;
export type OptionalOrderField = keyof typeof optionalFields;
export const optionalOrderFields = Object.keys(optionalFields) as OptionalOrderField[];

/** What one order of the record costs in Shopify's points. */
export const orderCost = (fields: readonly OptionalOrderField[] = []) =>
  requestedCost(ordersQuery(fields), { first: 1 }) - requestedCost(ordersQuery(fields), { first: 0 });
/** Shopify refuses a query over 1000 points: the page size is lowered to fit. */
export const maxPageSize = (requested: number, fields: readonly OptionalOrderField[] = []) =>
  largestPage(ordersQuery(fields), 'first', requested);

const MONEY_FRAGMENT =
  'fragment Money on MoneyBag { shopMoney { amount currencyCode } presentmentMoney { amount currencyCode } }';
const queries = new Map<string, string>();

/** The import query for a choice of optional fields (built once per choice). */
export function ordersQuery(fields: readonly OptionalOrderField[] = []): string {
  const key = [...fields].sort().join(',');
  let query = queries.get(key);
  if (!query) {
    const selection = [STANDARD_FIELDS, ...[...fields].sort().map((field) => optionalFields[field])].join('\n  ');
    query = `query ImportOrders($first: Int!, $after: String, $query: String!) {
  orders(first: $first, after: $after, query: $query, sortKey: UPDATED_AT) {
    nodes { ${selection} }
    pageInfo { hasNextPage endCursor }
  }
}
${MONEY_FRAGMENT}`;
    queries.set(key, query);
  }
  return query;
}

/** Shopify counts up to 10,000 orders by default; past that it says AT_LEAST, and full pages are asked for anyway. */
const ORDERS_COUNT_QUERY = `query CountOrders($query: String!) { ordersCount(query: $query) { count precision } }`;

export const orderImportDocuments = [ordersQuery(), ordersQuery(optionalOrderFields), ORDERS_COUNT_QUERY];

const money = (value: GraphqlNode | null) =>
  value ? { Amount: Number(value.amount), CurrencyCode: value.currencyCode } : null;
const moneySet = (bag: GraphqlNode | null) =>
  bag ? { ShopMoney: money(bag.shopMoney), PresentmentMoney: money(bag.presentmentMoney) } : null;

export type OrderRecord = ReturnType<typeof orderRecord>;

export function orderRecord(order: GraphqlNode) {
  return {
    ...optionalParts(order),
    Id: order.id as string,
    LegacyResourceId: String(order.legacyResourceId),
    Name: order.name,
    CreatedAt: order.createdAt,
    UpdatedAt: order.updatedAt as string,
    ProcessedAt: order.processedAt,
    CancelledAt: order.cancelledAt ?? null,
    DisplayFinancialStatus: order.displayFinancialStatus ?? null,
    CurrencyCode: order.currencyCode,
    TotalPriceSet: moneySet(order.totalPriceSet),
    Tags: order.tags,
    CustomAttributes: (order.customAttributes as GraphqlNode[]).map((attribute) => ({
      Key: attribute.key,
      Value: attribute.value ?? null,
    })),
    Metafield: order.metafield
      ? {
          Id: order.metafield.id,
          Key: order.metafield.key,
          Value: order.metafield.value,
          Namespace: order.metafield.namespace,
        }
      : null,
    Refunds: (order.refunds as GraphqlNode[]).map((refund) => ({
      Id: refund.id,
      LegacyResourceId: String(refund.legacyResourceId),
      CreatedAt: refund.createdAt,
      TotalRefundedSet: moneySet(refund.totalRefundedSet),
    })),
    Transactions: (order.transactions as GraphqlNode[]).map((transaction) => ({
      Id: transaction.id,
      Kind: transaction.kind,
      Status: transaction.status,
      Gateway: transaction.gateway,
      ProcessedAt: transaction.processedAt,
      AmountSet: moneySet(transaction.amountSet),
    })),
  };
}

function optionalParts(order: GraphqlNode) {
  return {
    ...(order.lineItems !== undefined
      ? {
          LineItems: {
            Nodes: (order.lineItems.nodes as GraphqlNode[]).map((item) => ({
              Id: item.id,
              Sku: item.sku ?? null,
              Title: item.title,
              Quantity: item.quantity,
              OriginalUnitPriceSet: moneySet(item.originalUnitPriceSet),
              DiscountedTotalSet: moneySet(item.discountedTotalSet),
            })),
            PageInfo: {
              HasNextPage: order.lineItems.pageInfo.hasNextPage,
              EndCursor: order.lineItems.pageInfo.endCursor,
            },
          },
        }
      : {}),
    ...(order.shippingAddress !== undefined
      ? {
          ShippingAddress: order.shippingAddress && {
            City: order.shippingAddress.city,
            ProvinceCode: order.shippingAddress.provinceCode,
            Zip: order.shippingAddress.zip,
            CountryCode: order.shippingAddress.countryCodeV2,
          },
        }
      : {}),
    ...(order.customer !== undefined
      ? { Customer: order.customer && { Id: order.customer.id, DisplayName: order.customer.displayName } }
      : {}),
  };
}

/** Shopify's search syntax for the window, with the tenant's own filter ANDed. */
export function windowQuery(from: string, to: string, filter?: string) {
  const window = `updated_at:>='${from}' AND updated_at:<='${to}'`;
  return filter ? `${window} AND (${filter})` : window;
}

/** How many orders a search finds (one point): what sizes the pages of a poll. */
export async function countOrders(api: ShopifyAdminApi, query: string): Promise<number> {
  const { ordersCount } = await api.query<{ ordersCount: { count: number } | null }>(ORDERS_COUNT_QUERY, { query });
  return ordersCount?.count ?? 0;
}

/**
 * The next page's size: the orders still counted or, once a poll finds more than were counted (orders changed
 * meanwhile), as many as it found so far; never above what fits Shopify's limit per query.
 */
export const nextPageSize = (maxSize: number, counted: number, found: number) =>
  Math.min(maxSize, Math.max(1, counted > found ? counted - found : found));

/** One page of orders changed in the window, in updated_at order. */
export async function ordersPage(
  api: ShopifyAdminApi,
  fields: readonly OptionalOrderField[],
  variables: { first: number; after: string | null; query: string },
) {
  const { orders } = await api.query<{ orders: Connection }>(ordersQuery(fields), variables);
  return { records: orders.nodes.map(orderRecord), pageInfo: orders.pageInfo };
}
