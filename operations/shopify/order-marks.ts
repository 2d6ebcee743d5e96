import { permanent, retryable } from '../../engine/model/index.ts';
import type { ShopifyAdminApi } from './admin-api.ts';
import { document, ORDER_MARKS_QUERY, PROCESSED_KEY, PROCESSED_NAMESPACE, type GraphqlNode } from './refund-query.ts';

/**
 * What marks an order as exported: the metafield `refundProcessed.listOfRefundProcessed` (a JSON
 * array of refund legacy ids, as text) and the tag `IPaaS Refunds Exported: <count>`.
 */
export const EXPORTED_TAG_PREFIX = 'IPaaS Refunds Exported: ';
const exportedTag = /^IPaaS Refunds Exported: \d+$/;
/** Rounds of read-then-write before giving the order up for this attempt (others keep writing it). */
const MAX_ROUNDS = 10;

// Each mutation answers with the order's marks as it left them, which saves reading them again.
const SET_PROCESSED = document(`mutation MarkRefundProcessed($metafields: [MetafieldsSetInput!]!) {
  metafieldsSet(metafields: $metafields) {
    metafields { id owner { ... on Order { ...OrderMarks } } }
    userErrors { field message code }
  }
}`);
const ADD_TAG = document(`mutation TagOrder($id: ID!, $add: [String!]!) {
  tagsAdd(id: $id, tags: $add) { node { ... on Order { ...OrderMarks } } userErrors { field message } }
}`);
const REPLACE_TAG = document(`mutation RetagOrder($id: ID!, $add: [String!]!, $remove: [String!]!) {
  tagsRemove(id: $id, tags: $remove) { userErrors { field message } }
  tagsAdd(id: $id, tags: $add) { node { ... on Order { ...OrderMarks } } userErrors { field message } }
}`);

export const orderMarkDocuments = [SET_PROCESSED, ADD_TAG, REPLACE_TAG];

export interface OrderMarks {
  processed: string[];
  tags: string[];
  metafield: GraphqlNode | null;
}

/** The processed ids in the metafield's value; anything that is not a JSON array of ids counts as none. */
export function parseProcessed(value: string | null | undefined): string[] {
  if (!value) return [];
  try {
    const parsed = JSON.parse(value);
    return Array.isArray(parsed) ? parsed.map(String) : [];
  } catch {
    return [];
  }
}

/** The marks as read with the order (`OrderMarks` fragment). */
export const marksOf = (order: GraphqlNode): OrderMarks => ({
  processed: parseProcessed(order.metafield?.value),
  tags: order.tags,
  metafield: order.metafield,
});

async function readMarks(api: ShopifyAdminApi, orderId: string): Promise<OrderMarks> {
  const { order } = await api.query<{ order: GraphqlNode | null }>(ORDER_MARKS_QUERY, { id: orderId });
  if (!order) throw permanent(`order ${orderId} no longer exists`);
  return marksOf(order);
}

function userErrorsOf(payload: GraphqlNode | null | undefined): GraphqlNode[] {
  return payload?.userErrors ?? [];
}

/**
 * Appends the refund's legacy id to the order's processed list (compare-and-set: two refunds of one
 * order written at once cannot drop each other's id), then makes the count tag match the list.
 * Both steps re-read and converge, so running this again, or concurrently for another refund of
 * the order, ends in the same state. `known` (marks read earlier) saves the first read: if they are
 * stale, the compare-and-set fails and the marks are read again.
 */
export async function markRefundExported(
  api: ShopifyAdminApi,
  orderId: string,
  refundLegacyId: string,
  known?: OrderMarks,
): Promise<{ processed: string[]; tag: string }> {
  let marks = known ?? (await readMarks(api, orderId));
  for (let round = 0; !marks.processed.includes(refundLegacyId); round++) {
    if (round === MAX_ROUNDS) throw retryable(`the processed-refunds list of order ${orderId} kept changing under us`);
    const { metafieldsSet } = await api.query<{ metafieldsSet: GraphqlNode }>(SET_PROCESSED, {
      metafields: [
        {
          ownerId: orderId,
          namespace: PROCESSED_NAMESPACE,
          key: PROCESSED_KEY,
          type: 'json',
          value: JSON.stringify([...marks.processed, refundLegacyId]),
          // null: "only if it does not exist yet".
          compareDigest: marks.metafield?.compareDigest ?? null,
        },
      ],
    });
    const errors = userErrorsOf(metafieldsSet);
    if (
      errors.length > 0 &&
      !errors.every((error) => error.code === 'STALE_OBJECT' || error.code === 'INVALID_COMPARE_DIGEST')
    ) {
      throw permanent(
        `Shopify refused to update the processed-refunds list: ${errors.map((error) => error.message).join('; ')}`,
        { details: { userErrors: errors } },
      );
    }
    // Set: the marks as the write left them. Refused as stale: someone else wrote first, so read theirs.
    const owner = metafieldsSet?.metafields?.[0]?.owner;
    marks = errors.length === 0 && owner ? marksOf(owner) : await readMarks(api, orderId);
  }

  for (let round = 0; ; round++) {
    const wanted = `${EXPORTED_TAG_PREFIX}${marks.processed.length}`;
    const stale = marks.tags.filter((tag) => exportedTag.test(tag) && tag !== wanted);
    if (stale.length === 0 && marks.tags.includes(wanted)) return { processed: marks.processed, tag: wanted };
    if (round === MAX_ROUNDS) throw retryable(`the tags of order ${orderId} kept changing under us`);
    const result = await api.query<Record<string, GraphqlNode>>(stale.length > 0 ? REPLACE_TAG : ADD_TAG, {
      id: orderId,
      add: [wanted],
      ...(stale.length > 0 ? { remove: stale } : {}),
    });
    const errors = Object.values(result).flatMap(userErrorsOf);
    if (errors.length > 0)
      throw permanent(`Shopify refused to tag order ${orderId}: ${errors.map((error) => error.message).join('; ')}`, {
        details: { userErrors: errors },
      });
    // Check again with the order as the tagging left it: a concurrent export of another refund may have moved the
    // count meanwhile.
    marks = result.tagsAdd?.node ? marksOf(result.tagsAdd.node) : await readMarks(api, orderId);
  }
}
