import { retryable } from '../../engine/model/index.ts';
import type { ShopifyAdminApi } from './admin-api.ts';

/**
 * The GraphQL the refund record needs, and no more: query cost is the scarce resource. Connections
 * are asked for a small first page (the requested cost grows with the page size) and the rest is
 * paged in only when there is more.
 */

/** A GraphQL object as it came back. */
// Shopify's answers, shaped by the query documents and checked against the record schema.
// biome-ignore lint/suspicious/noExplicitAny: see above
export type GraphqlNode = Record<string, any>;
export interface Connection<T = GraphqlNode> {
  nodes: T[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

export const PROCESSED_NAMESPACE = 'refundProcessed';
export const PROCESSED_KEY = 'listOfRefundProcessed';

const fragments: Record<string, string> = {
  Money: 'fragment Money on MoneyBag { shopMoney { amount currencyCode } presentmentMoney { amount currencyCode } }',
  LineItemFields: `fragment LineItemFields on LineItem {
    id requiresShipping taxable isGiftCard sku name title variantTitle vendor quantity
    duties { id harmonizedSystemCode countryCodeOfOrigin price { ...Money } }
    taxLines { title rate priceSet { ...Money } }
    totalDiscountSet { ...Money } discountedUnitPriceAfterAllDiscountsSet { ...Money } discountedTotalSet { ...Money }
    originalTotalSet { ...Money } originalUnitPriceSet { ...Money } discountedUnitPriceSet { ...Money }
    product { id }
    variant { id selectedOptions { name value } barcode price compareAtPrice }
    discountAllocations { allocatedAmountSet { ...Money } }
    customAttributes { key value }
  }`,
  RefundLineItemFields: `fragment RefundLineItemFields on RefundLineItem {
    id quantity restocked restockType location { id } lineItem { ...LineItemFields }
    priceSet { ...Money } subtotalSet { ...Money } totalTaxSet { ...Money }
  }`,
  TransactionFields: `fragment TransactionFields on OrderTransaction {
    id kind status errorCode gateway formattedGateway accountNumber authorizationCode authorizationExpiresAt
    createdAt processedAt
    fees {
      id type rate rateName flatFeeName
      amount { amount currencyCode } flatFee { amount currencyCode } taxAmount { amount currencyCode }
    }
    manuallyCapturable multiCapturable maximumRefundableV2 { amount currencyCode } paymentId
    settlementCurrency settlementCurrencyRate
    shopifyPaymentsSet { refundSet { acquirerReferenceNumber } }
    test totalUnsettledSet { ...Money } amountSet { ...Money } receiptJson
    paymentDetails {
      ... on CardPaymentDetails {
        name expirationMonth expirationYear paymentMethodName wallet avsResultCode bin cvvResultCode number company
      }
    }
    parentTransaction { id accountNumber }
  }`,
  TopTransactionFields: `fragment TopTransactionFields on OrderTransaction {
    id kind status errorCode gateway authorizationCode createdAt processedAt amountSet { ...Money } receiptJson
    paymentDetails { ... on CardPaymentDetails { avsResultCode bin cvvResultCode number company } }
    parentTransaction { id accountNumber }
  }`,
  OrderMarks: `fragment OrderMarks on Order {
    id tags
    metafield(namespace: "${PROCESSED_NAMESPACE}", key: "${PROCESSED_KEY}") { id namespace key value compareDigest }
  }`,
  FulfillmentLineFields: `fragment FulfillmentLineFields on FulfillmentLineItem {
    id quantity originalTotalSet { ...Money } discountedTotalSet { ...Money } lineItem { ...LineItemFields }
  }`,
  ReturnLineFields: `fragment ReturnLineFields on ReturnLineItem {
    id quantity customerNote refundableQuantity refundedQuantity returnReason returnReasonNote
    restockingFee { id percentage amountSet { ...Money } }
    fulfillmentLineItem { ...FulfillmentLineFields }
  }`,
  // The fulfillment line item of a reverse line item is one of the return's: its id is enough here.
  ReverseLineFields: `fragment ReverseLineFields on ReverseFulfillmentOrderLineItem {
    id totalQuantity dispositions { id quantity type location { id } } fulfillmentLineItem { id }
  }`,
  ReverseDeliveryFields: `fragment ReverseDeliveryFields on ReverseDelivery {
    id
    deliverable {
      ... on ReverseDeliveryShippingDeliverable { tracking { number carrierName url } label { publicFileUrl } }
    }
  }`,
};

/** The document with exactly the fragments it uses (GraphQL rejects unused ones). */
function document(body: string): string {
  const used = new Set<string>();
  const visit = (text: string) => {
    for (const [, name] of text.matchAll(/\.\.\.(\w+)/g)) {
      if (!fragments[name] || used.has(name)) continue;
      used.add(name);
      visit(fragments[name]);
    }
  };
  visit(body);
  return [body, ...[...used].map((name) => fragments[name])].join('\n');
}

interface ConnectionSpec {
  owner: string;
  field: string;
  node: string;
  /** Page size inside the main query. */
  first: number;
  /** Page size of the follow-up queries (kept under Shopify's 1000-point limit per query). */
  page: number;
}

const connectionSpecs = {
  refundLineItems: { owner: 'Refund', field: 'refundLineItems', node: '...RefundLineItemFields', first: 5, page: 20 },
  refundShippingLines: {
    owner: 'Refund',
    field: 'refundShippingLines',
    node: 'id shippingLine { title code } subtotalAmountSet { ...Money } taxAmountSet { ...Money }',
    first: 2,
    page: 50,
  },
  transactions: { owner: 'Refund', field: 'transactions', node: '...TransactionFields', first: 3, page: 50 },
  orderAdjustments: {
    owner: 'Refund',
    field: 'orderAdjustments',
    node: 'id reason amountSet { ...Money } taxAmountSet { ...Money }',
    first: 2,
    page: 50,
  },
  returnLineItems: {
    owner: 'Return',
    field: 'returnLineItems',
    node: '... on ReturnLineItem { ...ReturnLineFields }',
    first: 5,
    page: 20,
  },
  exchangeLineItems: {
    owner: 'Return',
    field: 'exchangeLineItems',
    node: 'id quantity variantId lineItems { ...LineItemFields }',
    first: 3,
    page: 20,
  },
  reverseFulfillmentOrders: {
    owner: 'Return',
    field: 'reverseFulfillmentOrders',
    first: 2,
    page: 5,
    node:
      'id status thirdPartyConfirmation { status } lineItems(first: 10) { nodes { ...ReverseLineFields } ' +
      'pageInfo { hasNextPage endCursor } } reverseDeliveries(first: 2) { nodes { ...ReverseDeliveryFields } ' +
      'pageInfo { hasNextPage endCursor } }',
  },
  reverseLineItems: {
    owner: 'ReverseFulfillmentOrder',
    field: 'lineItems',
    node: '...ReverseLineFields',
    first: 10,
    page: 100,
  },
  reverseDeliveries: {
    owner: 'ReverseFulfillmentOrder',
    field: 'reverseDeliveries',
    node: '...ReverseDeliveryFields',
    first: 2,
    page: 50,
  },
} satisfies Record<string, ConnectionSpec>;

const firstPage = (spec: ConnectionSpec) =>
  `${spec.field}(first: ${spec.first}) { nodes { ${spec.node} } pageInfo { hasNextPage endCursor } }`;

const pageDocuments = new Map<ConnectionSpec, string>(
  Object.values(connectionSpecs).map((spec) => [
    spec,
    document(
      `query ${spec.owner}${spec.field[0].toUpperCase()}${spec.field.slice(1)}Page($id: ID!, $after: String) {
    node(id: $id) {
      ... on ${spec.owner} {
        ${spec.field}(first: ${spec.page}, after: $after) { nodes { ${spec.node} } pageInfo { hasNextPage endCursor } }
      }
    }
  }`,
    ),
  ]),
);

export const REFUND_QUERY = document(`query RefundForErp($id: ID!) {
  refund(id: $id) {
    id legacyResourceId createdAt updatedAt note
    totalRefundedSet { ...Money }
    duties { amountSet { ...Money } originalDuty { id harmonizedSystemCode countryCodeOfOrigin } }
    ${firstPage(connectionSpecs.refundLineItems)}
    ${firstPage(connectionSpecs.refundShippingLines)}
    ${firstPage(connectionSpecs.transactions)}
    ${firstPage(connectionSpecs.orderAdjustments)}
    return { id }
    order { ...OrderMarks app { id name } customAttributes { key value } transactions { ...TopTransactionFields } }
  }
}`);

export const RETURN_QUERY = document(`query ReturnForErp($id: ID!) {
  return(id: $id) {
    id name status totalQuantity decline { reason note }
    returnShippingFees { id amountSet { ...Money } }
    ${firstPage(connectionSpecs.returnLineItems)}
    ${firstPage(connectionSpecs.exchangeLineItems)}
    ${firstPage(connectionSpecs.reverseFulfillmentOrders)}
  }
}`);

/** Fulfillment line items a reverse fulfillment order names but the return's line items do not carry. */
export const FULFILLMENT_LINES_QUERY = document(`query FulfillmentLines($ids: [ID!]!) {
  nodes(ids: $ids) { ... on FulfillmentLineItem { ...FulfillmentLineFields } }
}`);

export const ORDER_MARKS_QUERY = document('query OrderMarks($id: ID!) { order(id: $id) { ...OrderMarks } }');

/** An order's refunds (a plain list in Shopify's schema), with what deciding which to export needs. */
export const ORDER_REFUNDS_QUERY = document(`query OrderRefunds($id: ID!) {
  order(id: $id) { ...OrderMarks customAttributes { key value } refunds { id legacyResourceId createdAt } }
}`);

/** A refund with every page of its connections, its order, and its return (if any) likewise complete. */
export interface RefundData {
  refund: GraphqlNode;
  return: GraphqlNode | null;
}

export async function fetchRefund(api: ShopifyAdminApi, refundId: string): Promise<RefundData | null> {
  const { refund } = await api.query<{ refund: GraphqlNode | null }>(REFUND_QUERY, { id: refundId });
  if (!refund) return null;
  for (const key of ['refundLineItems', 'refundShippingLines', 'transactions', 'orderAdjustments'] as const) {
    refund[key] = await allPages(api, connectionSpecs[key], refund.id, refund[key]);
  }
  return { refund, return: refund.return ? await fetchReturn(api, refund.return.id) : null };
}

async function fetchReturn(api: ShopifyAdminApi, returnId: string): Promise<GraphqlNode | null> {
  const { return: found } = await api.query<{ return: GraphqlNode | null }>(RETURN_QUERY, { id: returnId });
  if (!found) return null;
  for (const key of ['returnLineItems', 'exchangeLineItems', 'reverseFulfillmentOrders'] as const) {
    found[key] = await allPages(api, connectionSpecs[key], found.id, found[key]);
  }
  for (const order of found.reverseFulfillmentOrders.nodes as GraphqlNode[]) {
    order.lineItems = await allPages(api, connectionSpecs.reverseLineItems, order.id, order.lineItems);
    order.reverseDeliveries = await allPages(api, connectionSpecs.reverseDeliveries, order.id, order.reverseDeliveries);
  }
  await completeFulfillmentLines(api, found);
  return found;
}

/** Fills each reverse line item's fulfillment line item from the return's own (fetching only those missing). */
async function completeFulfillmentLines(api: ShopifyAdminApi, found: GraphqlNode) {
  const known = new Map<string, GraphqlNode>(
    (found.returnLineItems.nodes as GraphqlNode[]).flatMap((item) =>
      item.fulfillmentLineItem ? [[item.fulfillmentLineItem.id, item.fulfillmentLineItem] as const] : [],
    ),
  );
  const reverseLines = (found.reverseFulfillmentOrders.nodes as GraphqlNode[]).flatMap(
    (order) => order.lineItems.nodes as GraphqlNode[],
  );
  const missing = [
    ...new Set(
      reverseLines.flatMap((line) =>
        line.fulfillmentLineItem && !known.has(line.fulfillmentLineItem.id)
          ? [line.fulfillmentLineItem.id as string]
          : [],
      ),
    ),
  ];
  for (let start = 0; start < missing.length; start += 10) {
    const { nodes } = await api.query<{ nodes: Array<GraphqlNode | null> }>(FULFILLMENT_LINES_QUERY, {
      ids: missing.slice(start, start + 10),
    });
    for (const node of nodes) if (node?.id) known.set(node.id, node);
  }
  for (const line of reverseLines)
    if (line.fulfillmentLineItem)
      line.fulfillmentLineItem = known.get(line.fulfillmentLineItem.id) ?? line.fulfillmentLineItem;
}

async function allPages(
  api: ShopifyAdminApi,
  spec: ConnectionSpec,
  ownerId: string,
  first: Connection,
): Promise<Connection> {
  const nodes = [...first.nodes];
  let { pageInfo } = first;
  while (pageInfo.hasNextPage) {
    const { node } = await api.query<{ node: GraphqlNode | null }>(pageDocuments.get(spec)!, {
      id: ownerId,
      after: pageInfo.endCursor,
    });
    const page = node?.[spec.field] as Connection | undefined;
    if (!page) throw retryable(`${spec.owner} ${ownerId} vanished while its ${spec.field} were being read`);
    nodes.push(...page.nodes);
    pageInfo = page.pageInfo;
  }
  return { nodes, pageInfo };
}

/** Every GraphQL document this module sends (the tests validate each against Shopify's schema). */
export const refundDocuments = [
  REFUND_QUERY,
  RETURN_QUERY,
  FULFILLMENT_LINES_QUERY,
  ORDER_MARKS_QUERY,
  ORDER_REFUNDS_QUERY,
  ...pageDocuments.values(),
];
