import type { AnswerPricer } from '../../engine/outbound/index.ts';

/**
 * A REST Admin API answer says the shop's bucket of calls: `X-Shopify-Shop-Api-Call-Limit: 32/40`, the calls in it
 * and its size. Each call is one; the bucket leaks a call a second per 20 of its size (40 and 2/s on Standard plans,
 * 80 and 4/s on Advanced, 400 and 20/s on Plus). An http.request node's requests to a shop draw on that bucket.
 */
export const restCallLimit: AnswerPricer = (response) => {
  const match = /^(\d+)\/(\d+)$/.exec(response.headers['x-shopify-shop-api-call-limit']?.trim() ?? '');
  if (!match) return undefined;
  const used = Number(match[1]);
  const size = Number(match[2]);
  // Any server may send the header: a figure no shop would say prices nothing.
  if (!Number.isSafeInteger(used) || !Number.isSafeInteger(size) || size === 0) return undefined;
  return { available: Math.max(0, size - used), maximum: size, restoreRate: size / 20, cost: 1 };
};
