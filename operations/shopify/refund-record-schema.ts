/**
 * The Refund record as a JSON Schema, table by table ("Resources and their fields"). Objects
 * the glossary spells out are closed (exactly its fields, all present, null where empty); entries whose
 * shape is not known are open objects. Every assembled record is validated against it
 * before it is sent.
 */
type Schema = Record<string, unknown>;

const nullable = (schema: Schema): Schema => ({ anyOf: [schema, { type: 'null' }] });
const text = { type: 'string' } as const;
const maybeText = { type: ['string', 'null'] } as const;
const integer = { type: 'integer' } as const;
const boolean = { type: 'boolean' } as const;
const timestamp = {
  type: 'string',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$',
} as const;
const gid = { type: 'string', pattern: '^gid://[^/]+/[A-Za-z]+/\\d+$' } as const;
const openObject = { type: 'object' } as const;

/** An object with exactly these fields, all required. */
const record = (properties: Record<string, Schema>): Schema => ({
  type: 'object',
  additionalProperties: false,
  required: Object.keys(properties),
  properties,
});

const connection = (node: Schema): Schema =>
  record({
    Nodes: { type: 'array', items: node },
    PageInfo: record({ HasNextPage: boolean, EndCursor: maybeText }),
  });

const money = record({ Amount: { type: 'number' }, CurrencyCode: { type: 'string', pattern: '^[A-Z]{3}$' } });
const moneySet = record({ ShopMoney: money, PresentmentMoney: money });
const keyValue = record({ Key: text, Value: maybeText });
const idOnly = record({ Id: gid });

const lineItem = record({
  Id: gid,
  RequiresShipping: boolean,
  Taxable: boolean,
  IsGiftCard: boolean,
  Duties: { type: 'array', items: openObject },
  TaxLines: { type: 'array', items: openObject },
  Sku: maybeText,
  Name: text,
  Title: text,
  VariantTitle: maybeText,
  Vendor: maybeText,
  Quantity: integer,
  TotalDiscountSet: moneySet,
  DiscountedUnitPriceAfterAllDiscountsSet: moneySet,
  DiscountedTotalSet: moneySet,
  OriginalTotalSet: moneySet,
  OriginalUnitPriceSet: moneySet,
  DiscountedUnitPriceSet: moneySet,
  Product: nullable(idOnly),
  Variant: nullable(
    record({
      Id: gid,
      SelectedOptions: { type: 'array', items: record({ Name: text, Value: text }) },
      Barcode: maybeText,
      Price: { type: 'number' },
      CompareAtPrice: { type: ['number', 'null'] },
    }),
  ),
  DiscountAllocations: { type: 'array', items: openObject },
  CustomAttributes: { type: 'array', items: keyValue },
});

const metafield = record({ Id: gid, Key: text, Value: text, Namespace: text });
const app = record({ Name: text, Id: gid });
const refundOrder = record({
  Id: gid,
  App: nullable(app),
  CustomAttributes: nullable({ type: 'array', items: keyValue }),
  Metafield: nullable(metafield),
  Tags: nullable({ type: 'array', items: text }),
});

const transaction = record({
  Id: gid,
  Kind: text,
  Status: text,
  ErrorCode: maybeText,
  Gateway: text,
  FormattedGateway: text,
  AccountNumber: maybeText,
  AuthorizationCode: maybeText,
  AuthorizationExpiresAt: nullable(timestamp),
  CreatedAt: timestamp,
  ProcessedAt: timestamp,
  Fees: { type: 'array', items: openObject },
  ManuallyCapturable: boolean,
  MultiCapturable: boolean,
  MaximumRefundableV2: nullable(money),
  PaymentId: maybeText,
  SettlementCurrency: maybeText,
  SettlementCurrencyRate: { type: ['number', 'null'] },
  StorePaymentsSet: nullable(openObject),
  Test: boolean,
  TotalUnsettledSet: nullable(moneySet),
  AmountSet: moneySet,
  ReceiptJson: text,
  Order: refundOrder,
  PaymentDetails: nullable(
    record({
      Name: maybeText,
      ExpirationMonth: { type: ['integer', 'null'] },
      ExpirationYear: { type: ['integer', 'null'] },
      PaymentMethodName: maybeText,
      Wallet: maybeText,
      AvsResultCode: maybeText,
      Bin: maybeText,
      CvvResultCode: maybeText,
      Number: maybeText,
      Company: maybeText,
    }),
  ),
  ParentTransaction: nullable(record({ Id: gid, AccountNumber: maybeText })),
});

const topTransaction = record({
  AmountSet: moneySet,
  AuthorizationCode: maybeText,
  ProcessedAt: timestamp,
  Status: text,
  ErrorCode: maybeText,
  Gateway: text,
  Id: gid,
  Kind: text,
  ReceiptJson: text,
  ParentTransaction: nullable(record({ Id: gid, AccountNumber: maybeText })),
  PaymentDetails: nullable(
    record({
      AvsResultCode: maybeText,
      Bin: maybeText,
      CvvResultCode: maybeText,
      Number: maybeText,
      Company: maybeText,
    }),
  ),
});

const fulfillmentLineItem = record({
  Id: gid,
  LineItem: lineItem,
  Quantity: { type: ['integer', 'null'] },
  OriginalTotalSet: moneySet,
  DiscountedTotalSet: moneySet,
});

const returnSummary = {
  Id: gid,
  Name: text,
  Status: text,
  TotalQuantity: integer,
  Decline: nullable(openObject),
};

const topReturn = record({
  ...returnSummary,
  Order: record({
    Id: gid,
    App: nullable(app),
    Metafield: nullable(metafield),
    Tags: nullable({ type: 'array', items: text }),
  }),
  ReturnLineItems: connection(
    record({
      Id: gid,
      Quantity: integer,
      CustomerNote: maybeText,
      RefundableQuantity: integer,
      RefundedQuantity: integer,
      ReturnReason: text,
      ReturnReasonNote: text,
      RestockingFee: nullable(openObject),
      FulfillmentLineItem: fulfillmentLineItem,
    }),
  ),
  ExchangeLineItems: connection(openObject),
  ReturnShippingFees: { type: 'array', items: openObject },
  ReverseFulfillmentOrders: connection(
    record({
      Id: gid,
      Status: text,
      LineItems: connection(
        record({
          Id: gid,
          Dispositions: {
            type: 'array',
            items: record({ Id: gid, Location: nullable(idOnly), Quantity: integer, Type: text }),
          },
          FulfillmentLineItem: nullable(fulfillmentLineItem),
          TotalQuantity: integer,
        }),
      ),
    }),
  ),
  ReverseDeliveries: connection(openObject),
  ThirdPartyConfirmation: nullable(openObject),
});

export const refundRecordSchema = record({
  Shop: { type: 'string', pattern: '^https?://' },
  OrderId: gid,
  Refund: record({
    Id: gid,
    CreatedAt: timestamp,
    UpdatedAt: timestamp,
    Duties: { type: 'array', items: openObject },
    LegacyResourceId: { type: 'string', pattern: '^\\d+$' },
    Note: maybeText,
    RefundLineItems: connection(
      record({
        Id: gid,
        LineItem: lineItem,
        Location: nullable(idOnly),
        PriceSet: moneySet,
        Quantity: integer,
        Restocked: boolean,
        RestockType: text,
        SubtotalSet: moneySet,
        TotalTaxSet: moneySet,
      }),
    ),
    RefundShippingLines: connection(openObject),
    TotalRefundedSet: moneySet,
    Transactions: connection(transaction),
    Order: refundOrder,
    Return: nullable(record(returnSummary)),
    OrderAdjustments: connection(openObject),
  }),
  Return: nullable(topReturn),
  Transactions: { type: 'array', items: topTransaction },
});
