import { SchemaValidator } from '../../engine/model/index.ts';
import type { Connection, GraphqlNode, RefundData } from './refund-query.ts';
import { refundRecordSchema } from './refund-record-schema.ts';

/**
 * Assembles the Refund record from what GraphQL returned: PascalCase names, connections as
 * {Nodes, PageInfo}, money as numbers. The mapping, field -> GraphQL path, is in README.md.
 */
export type RefundRecord = Record<string, unknown>;

export const refundRecordValidator = new SchemaValidator<RefundRecord>(refundRecordSchema, 'Refund record');

type Node = GraphqlNode;

const money = (value: Node | null | undefined) =>
  value ? { Amount: Number(value.amount), CurrencyCode: value.currencyCode } : null;
const moneySet = (bag: Node | null | undefined) =>
  bag ? { ShopMoney: money(bag.shopMoney), PresentmentMoney: money(bag.presentmentMoney) } : null;
const numberOrNull = (value: string | number | null | undefined) =>
  value === null || value === undefined ? null : Number(value);
const keyValues = (list: Node[] | null | undefined) =>
  list?.map((attribute) => ({ Key: attribute.key, Value: attribute.value ?? null })) ?? null;

function connection<T>(value: Connection, mapNode: (node: Node) => T) {
  return {
    Nodes: value.nodes.map(mapNode),
    PageInfo: { HasNextPage: value.pageInfo.hasNextPage, EndCursor: value.pageInfo.endCursor },
  };
}

/** `receiptJson` comes as text or as an object depending on the version: the record carries text. */
const receiptJson = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value ?? null));

function lineItem(item: Node) {
  return {
    Id: item.id,
    RequiresShipping: item.requiresShipping,
    Taxable: item.taxable,
    IsGiftCard: item.isGiftCard,
    Duties: item.duties.map((duty: Node) => ({
      Id: duty.id,
      HarmonizedSystemCode: duty.harmonizedSystemCode,
      CountryCodeOfOrigin: duty.countryCodeOfOrigin,
      Price: moneySet(duty.price),
    })),
    TaxLines: item.taxLines.map((line: Node) => ({
      Title: line.title,
      Rate: line.rate,
      PriceSet: moneySet(line.priceSet),
    })),
    Sku: item.sku,
    Name: item.name,
    Title: item.title,
    VariantTitle: item.variantTitle,
    Vendor: item.vendor,
    Quantity: item.quantity,
    TotalDiscountSet: moneySet(item.totalDiscountSet),
    DiscountedUnitPriceAfterAllDiscountsSet: moneySet(item.discountedUnitPriceAfterAllDiscountsSet),
    DiscountedTotalSet: moneySet(item.discountedTotalSet),
    OriginalTotalSet: moneySet(item.originalTotalSet),
    OriginalUnitPriceSet: moneySet(item.originalUnitPriceSet),
    DiscountedUnitPriceSet: moneySet(item.discountedUnitPriceSet),
    Product: item.product ? { Id: item.product.id } : null,
    Variant: item.variant
      ? {
          Id: item.variant.id,
          SelectedOptions: item.variant.selectedOptions.map((option: Node) => ({
            Name: option.name,
            Value: option.value,
          })),
          Barcode: item.variant.barcode,
          Price: Number(item.variant.price),
          CompareAtPrice: numberOrNull(item.variant.compareAtPrice),
        }
      : null,
    DiscountAllocations: item.discountAllocations.map((allocation: Node) => ({
      AllocatedAmountSet: moneySet(allocation.allocatedAmountSet),
    })),
    CustomAttributes: keyValues(item.customAttributes) ?? [],
  };
}

const app = (value: Node | null) => (value ? { Name: value.name, Id: value.id } : null);
const metafield = (value: Node | null) =>
  value ? { Id: value.id, Key: value.key, Value: value.value, Namespace: value.namespace } : null;

function orderSummary(order: Node) {
  return {
    Id: order.id,
    App: app(order.app),
    CustomAttributes: keyValues(order.customAttributes),
    Metafield: metafield(order.metafield),
    Tags: order.tags ?? null,
  };
}

function cardDetails(details: Node | null) {
  return details && 'avsResultCode' in details ? details : null;
}

function transaction(item: Node, order: ReturnType<typeof orderSummary>) {
  const card = cardDetails(item.paymentDetails);
  return {
    Id: item.id,
    Kind: item.kind,
    Status: item.status,
    ErrorCode: item.errorCode,
    Gateway: item.gateway,
    FormattedGateway: item.formattedGateway,
    AccountNumber: item.accountNumber,
    AuthorizationCode: item.authorizationCode,
    AuthorizationExpiresAt: item.authorizationExpiresAt,
    CreatedAt: item.createdAt,
    ProcessedAt: item.processedAt ?? item.createdAt,
    Fees: item.fees.map((fee: Node) => ({
      Id: fee.id,
      Type: fee.type,
      Rate: Number(fee.rate),
      RateName: fee.rateName,
      FlatFeeName: fee.flatFeeName,
      Amount: money(fee.amount),
      FlatFee: money(fee.flatFee),
      TaxAmount: money(fee.taxAmount),
    })),
    ManuallyCapturable: item.manuallyCapturable,
    MultiCapturable: item.multiCapturable,
    MaximumRefundableV2: money(item.maximumRefundableV2),
    PaymentId: item.paymentId,
    SettlementCurrency: item.settlementCurrency,
    SettlementCurrencyRate: numberOrNull(item.settlementCurrencyRate),
    // The record's StorePaymentsSet is Shopify's shopifyPaymentsSet (Shopify Payments' own refund facts).
    StorePaymentsSet: item.shopifyPaymentsSet
      ? {
          RefundSet: item.shopifyPaymentsSet.refundSet
            ? { AcquirerReferenceNumber: item.shopifyPaymentsSet.refundSet.acquirerReferenceNumber }
            : null,
        }
      : null,
    Test: item.test,
    TotalUnsettledSet: moneySet(item.totalUnsettledSet),
    AmountSet: moneySet(item.amountSet),
    ReceiptJson: receiptJson(item.receiptJson),
    // Every transaction of a refund belongs to the refund's order: taken from it rather than asked for again.
    Order: order,
    PaymentDetails: card && {
      Name: card.name,
      ExpirationMonth: card.expirationMonth,
      ExpirationYear: card.expirationYear,
      PaymentMethodName: card.paymentMethodName,
      Wallet: card.wallet,
      AvsResultCode: card.avsResultCode,
      Bin: card.bin,
      CvvResultCode: card.cvvResultCode,
      Number: card.number,
      Company: card.company,
    },
    ParentTransaction: item.parentTransaction
      ? { Id: item.parentTransaction.id, AccountNumber: item.parentTransaction.accountNumber }
      : null,
  };
}

function topTransaction(item: Node) {
  const card = cardDetails(item.paymentDetails);
  return {
    AmountSet: moneySet(item.amountSet),
    AuthorizationCode: item.authorizationCode,
    ProcessedAt: item.processedAt ?? item.createdAt,
    Status: item.status,
    ErrorCode: item.errorCode,
    Gateway: item.gateway,
    Id: item.id,
    Kind: item.kind,
    ReceiptJson: receiptJson(item.receiptJson),
    ParentTransaction: item.parentTransaction
      ? { Id: item.parentTransaction.id, AccountNumber: item.parentTransaction.accountNumber }
      : null,
    PaymentDetails: card && {
      AvsResultCode: card.avsResultCode,
      Bin: card.bin,
      CvvResultCode: card.cvvResultCode,
      Number: card.number,
      Company: card.company,
    },
  };
}

const processedTime = (item: Node) => Date.parse(item.processedAt ?? item.createdAt);

/**
 * The order's transactions up to this refund (processed no later than the refund or its own
 * transactions), in processing order, without the first one: the initial sale.
 */
function transactionsUpToRefund(refund: Node) {
  const own: Node[] = refund.transactions.nodes;
  const cutoff = Math.max(Date.parse(refund.createdAt), ...own.map(processedTime));
  const ordered = [...(refund.order.transactions as Node[])].sort(
    (a, b) => processedTime(a) - processedTime(b) || Date.parse(a.createdAt) - Date.parse(b.createdAt),
  );
  return ordered
    .slice(1)
    .filter((item) => processedTime(item) <= cutoff)
    .map(topTransaction);
}

function fulfillmentLine(item: Node | null) {
  if (!item) return null;
  return {
    Id: item.id,
    LineItem: lineItem(item.lineItem),
    Quantity: item.quantity,
    OriginalTotalSet: moneySet(item.originalTotalSet),
    DiscountedTotalSet: moneySet(item.discountedTotalSet),
  };
}

const decline = (value: Node | null) => (value ? { Reason: value.reason, Note: value.note } : null);

function topReturn(found: Node, order: Node) {
  const reverseOrders: Node[] = found.reverseFulfillmentOrders.nodes;
  const deliveries = reverseOrders.flatMap((reverse) =>
    (reverse.reverseDeliveries.nodes as Node[]).map((delivery) => ({ delivery, reverse })),
  );
  const confirmation = reverseOrders.find((reverse) => reverse.thirdPartyConfirmation)?.thirdPartyConfirmation;
  return {
    Id: found.id,
    Name: found.name,
    Status: found.status,
    TotalQuantity: found.totalQuantity,
    Decline: decline(found.decline),
    Order: { Id: order.id, App: app(order.app), Metafield: metafield(order.metafield), Tags: order.tags ?? null },
    ReturnLineItems: connection(found.returnLineItems, (item) => ({
      Id: item.id,
      Quantity: item.quantity,
      CustomerNote: item.customerNote,
      RefundableQuantity: item.refundableQuantity,
      RefundedQuantity: item.refundedQuantity,
      ReturnReason: item.returnReason,
      ReturnReasonNote: item.returnReasonNote,
      RestockingFee: item.restockingFee
        ? {
            Id: item.restockingFee.id,
            Percentage: item.restockingFee.percentage,
            AmountSet: moneySet(item.restockingFee.amountSet),
          }
        : null,
      FulfillmentLineItem: fulfillmentLine(item.fulfillmentLineItem),
    })),
    ExchangeLineItems: connection(found.exchangeLineItems, (item) => ({
      Id: item.id,
      Quantity: item.quantity,
      VariantId: item.variantId,
      LineItems: (item.lineItems ?? []).map(lineItem),
    })),
    ReturnShippingFees: found.returnShippingFees.map((fee: Node) => ({
      Id: fee.id,
      AmountSet: moneySet(fee.amountSet),
    })),
    ReverseFulfillmentOrders: connection(found.reverseFulfillmentOrders, (reverse) => ({
      Id: reverse.id,
      Status: reverse.status,
      LineItems: connection(reverse.lineItems, (line) => ({
        Id: line.id,
        Dispositions: line.dispositions.map((disposition: Node) => ({
          Id: disposition.id,
          Location: disposition.location ? { Id: disposition.location.id } : null,
          Quantity: disposition.quantity,
          Type: disposition.type,
        })),
        FulfillmentLineItem: fulfillmentLine(line.fulfillmentLineItem),
        TotalQuantity: line.totalQuantity,
      })),
    })),
    // Shopify keeps reverse deliveries on each reverse fulfillment order: gathered here across all of them.
    ReverseDeliveries: {
      Nodes: deliveries.map(({ delivery, reverse }) => ({
        Id: delivery.id,
        ReverseFulfillmentOrderId: reverse.id,
        Deliverable:
          delivery.deliverable && 'tracking' in delivery.deliverable
            ? {
                Tracking: delivery.deliverable.tracking && {
                  Number: delivery.deliverable.tracking.number,
                  CarrierName: delivery.deliverable.tracking.carrierName,
                  Url: delivery.deliverable.tracking.url,
                },
                Label: delivery.deliverable.label && { PublicFileUrl: delivery.deliverable.label.publicFileUrl },
              }
            : null,
      })),
      PageInfo: { HasNextPage: false, EndCursor: null },
    },
    ThirdPartyConfirmation: confirmation ? { Status: confirmation.status } : null,
  };
}

/** The record, validated against its schema (docs/glossary.md) (a ValidationError names every bad field). */
export function assembleRefundRecord(shopUrl: string, data: RefundData): RefundRecord {
  const { refund } = data;
  const order = orderSummary(refund.order);
  const record = {
    Shop: shopUrl,
    OrderId: refund.order.id,
    Refund: {
      Id: refund.id,
      CreatedAt: refund.createdAt,
      UpdatedAt: refund.updatedAt,
      Duties: (refund.duties ?? []).map((duty: Node) => ({
        AmountSet: moneySet(duty.amountSet),
        OriginalDuty: duty.originalDuty && {
          Id: duty.originalDuty.id,
          HarmonizedSystemCode: duty.originalDuty.harmonizedSystemCode,
          CountryCodeOfOrigin: duty.originalDuty.countryCodeOfOrigin,
        },
      })),
      LegacyResourceId: String(refund.legacyResourceId),
      Note: refund.note,
      RefundLineItems: connection(refund.refundLineItems, (item) => ({
        Id: item.id,
        LineItem: lineItem(item.lineItem),
        Location: item.location ? { Id: item.location.id } : null,
        PriceSet: moneySet(item.priceSet),
        Quantity: item.quantity,
        Restocked: item.restocked,
        RestockType: item.restockType,
        SubtotalSet: moneySet(item.subtotalSet),
        TotalTaxSet: moneySet(item.totalTaxSet),
      })),
      RefundShippingLines: connection(refund.refundShippingLines, (line) => ({
        Id: line.id,
        ShippingLine: line.shippingLine && { Title: line.shippingLine.title, Code: line.shippingLine.code },
        SubtotalAmountSet: moneySet(line.subtotalAmountSet),
        TaxAmountSet: moneySet(line.taxAmountSet),
      })),
      TotalRefundedSet: moneySet(refund.totalRefundedSet),
      Transactions: connection(refund.transactions, (item) => transaction(item, order)),
      Order: order,
      Return: data.return
        ? {
            Id: data.return.id,
            Name: data.return.name,
            Status: data.return.status,
            TotalQuantity: data.return.totalQuantity,
            Decline: decline(data.return.decline),
          }
        : null,
      OrderAdjustments: connection(refund.orderAdjustments, (adjustment) => ({
        Id: adjustment.id,
        Reason: adjustment.reason,
        AmountSet: moneySet(adjustment.amountSet),
        TaxAmountSet: moneySet(adjustment.taxAmountSet),
      })),
    },
    Return: data.return ? topReturn(data.return, refund.order) : null,
    Transactions: transactionsUpToRefund(refund),
  };
  return refundRecordValidator.validate(record, '$.record');
}
