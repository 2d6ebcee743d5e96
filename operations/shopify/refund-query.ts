import { retryable } from '../../engine/model/index.ts';
import type { ShopifyAdminApi } from './admin-api.ts';

/**
 * The GraphQL the refund record needs, and no more: query cost is the scarce resource. Shopify
 * charges a connection for the page it asks for, not for what comes back, and admits a query only
 * when that requested cost fits the shop's bucket. So each connection asks for as many nodes as the
 * refund is known to hold (the webhook says, see `RefundSizes`), or one, and pages in the rest with
 * pages sized from what came so far. Sizes are variables: one document per query, whatever the sizes.
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
export function document(body: string): string {
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
  /** The variable its page size is in (the main query's and the page query's). */
  size: string;
  /** The largest page inside the main query: every connection at its largest keeps it under 1000 points. */
  max: number;
  /** The largest page of the follow-up queries (kept under Shopify's 1000-point limit per query). */
  page: number;
  /** Connections inside its nodes, whose sizes its page query takes too. */
  nested?: ConnectionSpec[];
}

const reverseLineItems: ConnectionSpec = {
  owner: 'ReverseFulfillmentOrder',
  field: 'lineItems',
  node: '...ReverseLineFields',
  size: 'reverseLineItems',
  max: 10,
  page: 100,
};
const reverseDeliveries: ConnectionSpec = {
  owner: 'ReverseFulfillmentOrder',
  field: 'reverseDeliveries',
  node: '...ReverseDeliveryFields',
  size: 'reverseDeliveries',
  max: 2,
  page: 50,
};

/** A connection's first page, its size a variable. */
const firstPage = (spec: ConnectionSpec) =>
  `${spec.field}(first: $${spec.size}) { nodes { ${spec.node} } pageInfo { hasNextPage endCursor } }`;

const connectionSpecs = {
  refundLineItems: {
    owner: 'Refund',
    field: 'refundLineItems',
    node: '...RefundLineItemFields',
    size: 'refundLineItems',
    max: 12,
    page: 20,
  },
  refundShippingLines: {
    owner: 'Refund',
    field: 'refundShippingLines',
    node: 'id shippingLine { title code } subtotalAmountSet { ...Money } taxAmountSet { ...Money }',
    size: 'refundShippingLines',
    max: 10,
    page: 50,
  },
  transactions: {
    owner: 'Refund',
    field: 'transactions',
    node: '...TransactionFields',
    size: 'transactions',
    max: 10,
    page: 50,
  },
  orderAdjustments: {
    owner: 'Refund',
    field: 'orderAdjustments',
    node: 'id reason amountSet { ...Money } taxAmountSet { ...Money }',
    size: 'orderAdjustments',
    max: 10,
    page: 50,
  },
  returnLineItems: {
    owner: 'Return',
    field: 'returnLineItems',
    node: '... on ReturnLineItem { ...ReturnLineFields }',
    size: 'returnLineItems',
    max: 10,
    page: 20,
  },
  exchangeLineItems: {
    owner: 'Return',
    field: 'exchangeLineItems',
    node: 'id quantity variantId lineItems { ...LineItemFields }',
    size: 'exchangeLineItems',
    max: 5,
    page: 20,
  },
  reverseFulfillmentOrders: {
    owner: 'Return',
    field: 'reverseFulfillmentOrders',
    node: `id status thirdPartyConfirmation { status } ${firstPage(reverseLineItems)} ${firstPage(reverseDeliveries)}`,
    size: 'reverseFulfillmentOrders',
    max: 2,
    page: 5,
    nested: [reverseLineItems, reverseDeliveries],
  },
  reverseLineItems,
  reverseDeliveries,
} satisfies Record<string, ConnectionSpec>;

type ConnectionName = keyof typeof connectionSpecs;
/** How many nodes some of a refund's (or its return's) connections hold, as far as anyone said. */
export type RefundSizes = Partial<Record<ConnectionName, number>>;

/** The page size a connection's first page asks for: what it is said to hold (at least one), within its maximum. */
const firstSize = (spec: ConnectionSpec, sizes: RefundSizes) =>
  Math.min(spec.max, Math.max(1, Math.floor(sizes[spec.size as ConnectionName] ?? 1)));

/** The size variables of connections, for a query that holds their first pages. */
const sizeVariables = (specs: ConnectionSpec[], sizes: RefundSizes) =>
  Object.fromEntries(specs.map((spec) => [spec.size, firstSize(spec, sizes)]));

const sizeDeclarations = (specs: ConnectionSpec[]) => specs.map((spec) => `, $${spec.size}: Int!`).join('');

const pageDocuments = new Map<ConnectionSpec, string>(
  Object.values<ConnectionSpec>(connectionSpecs).map((spec) => [
    spec,
    document(
      `query ${spec.owner}${spec.field[0].toUpperCase()}${spec.field.slice(1)}Page($id: ID!, $after: String, $first: Int!${sizeDeclarations(spec.nested ?? [])}) {
    node(id: $id) {
      ... on ${spec.owner} {
        ${spec.field}(first: $first, after: $after) { nodes { ${spec.node} } pageInfo { hasNextPage endCursor } }
      }
    }
  }`,
    ),
  ]),
);

const refundConnections = [
  connectionSpecs.refundLineItems,
  connectionSpecs.refundShippingLines,
  connectionSpecs.transactions,
  connectionSpecs.orderAdjustments,
];

export const REFUND_QUERY = document(`query RefundForErp($id: ID!${sizeDeclarations(refundConnections)}) {
  refund(id: $id) {
    id legacyResourceId createdAt updatedAt note
    totalRefundedSet { ...Money }
    duties { amountSet { ...Money } originalDuty { id harmonizedSystemCode countryCodeOfOrigin } }
    ${refundConnections.map(firstPage).join('\n    ')}
    return { id }
    order { ...OrderMarks app { id name } customAttributes { key value } transactions { ...TopTransactionFields } }
  }
}`);

const returnConnections = [
  connectionSpecs.returnLineItems,
  connectionSpecs.exchangeLineItems,
  connectionSpecs.reverseFulfillmentOrders,
];

export const RETURN_QUERY =
  document(`query ReturnForErp($id: ID!${sizeDeclarations([...returnConnections, reverseLineItems, reverseDeliveries])}) {
  return(id: $id) {
    id name status totalQuantity decline { reason note }
    returnShippingFees { id amountSet { ...Money } }
    ${returnConnections.map(firstPage).join('\n    ')}
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

/**
 * The sizes a `refunds/create` webhook shows (the REST Refund resource), if it is about `refundId`. They only
 * size the pages asked for: a body that says less than the refund holds costs a page more, never a line less.
 */
export function refundSizesOf(body: unknown, refundId: string): RefundSizes {
  const refund = body as Record<string, unknown> | null;
  if (refund?.admin_graphql_api_id !== refundId) return {};
  const count = (value: unknown) => (Array.isArray(value) ? value.length : undefined);
  return {
    refundLineItems: count(refund.refund_line_items),
    refundShippingLines: count(refund.refund_shipping_lines),
    transactions: count(refund.transactions),
    orderAdjustments: count(refund.order_adjustments),
  };
}

export async function fetchRefund(
  api: ShopifyAdminApi,
  refundId: string,
  sizes: RefundSizes = {},
): Promise<RefundData | null> {
  const { refund } = await api.query<{ refund: GraphqlNode | null }>(REFUND_QUERY, {
    id: refundId,
    ...sizeVariables(refundConnections, sizes),
  });
  if (!refund) return null;
  for (const spec of refundConnections)
    refund[spec.field] = await allPages(api, spec, refund.id, refund[spec.field], sizes);
  if (!refund.return) return { refund, return: null };
  // A return's lines are, as a rule, the lines its refund gives money back for.
  const lines = refund.refundLineItems.nodes.length;
  return {
    refund,
    return: await fetchReturn(api, refund.return.id, { returnLineItems: lines, reverseLineItems: lines }),
  };
}

async function fetchReturn(api: ShopifyAdminApi, returnId: string, sizes: RefundSizes): Promise<GraphqlNode | null> {
  const { return: found } = await api.query<{ return: GraphqlNode | null }>(RETURN_QUERY, {
    id: returnId,
    ...sizeVariables([...returnConnections, reverseLineItems, reverseDeliveries], sizes),
  });
  if (!found) return null;
  for (const spec of returnConnections)
    found[spec.field] = await allPages(api, spec, found.id, found[spec.field], sizes);
  for (const order of found.reverseFulfillmentOrders.nodes as GraphqlNode[]) {
    order.lineItems = await allPages(api, reverseLineItems, order.id, order.lineItems);
    order.reverseDeliveries = await allPages(api, reverseDeliveries, order.id, order.reverseDeliveries);
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

/**
 * The rest of a connection after its first page. Each page asks for the nodes still said to be
 * there or, past what was said, for as many as came so far (the sizes double, within the
 * connection's page limit): a connection that holds more than was said costs at most about twice
 * its nodes, in a few queries.
 */
async function allPages(
  api: ShopifyAdminApi,
  spec: ConnectionSpec,
  ownerId: string,
  first: Connection,
  sizes: RefundSizes = {},
): Promise<Connection> {
  const nodes = [...first.nodes];
  const said = sizes[spec.size as ConnectionName] ?? 0;
  let { pageInfo } = first;
  while (pageInfo.hasNextPage) {
    const { node } = await api.query<{ node: GraphqlNode | null }>(pageDocuments.get(spec)!, {
      id: ownerId,
      after: pageInfo.endCursor,
      first: Math.min(spec.page, Math.max(1, said > nodes.length ? said - nodes.length : nodes.length)),
      ...sizeVariables(spec.nested ?? [], sizes),
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
