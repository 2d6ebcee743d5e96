/**
 * Redis Cluster runs a script only over keys of one slot, and a hash tag (`{...}`) puts a key in the
 * slot of its tag. A deployment's keys (prefix P) fall in these groups:
 * - `{P:runs}`, `{P:runs:1...}` ... `{P:runs:<n-1>...}`: the run path's slot groups (RUN_GROUPS, decision 22). Each
 *   holds a run queue (BullMQ's keys), the lanes, leases and limits of the tenants assigned to it, the workers'
 *   heartbeats and slots in it, its tenants' delivery quotas and its epoch. fair-dispatch.lua moves runs from the
 *   lanes into the queue and admission reads the lanes' backlog, so they cannot be apart; the groups can, so the run
 *   traffic spreads over as many masters as there are groups. Group 0 also holds the maintenance flag and the
 *   recovery report.
 * - `{P:ticks}`: the schedules' tick queue and its epoch, in a slot of its own.
 * - `P:tributary:rate:<name>`: the API-call and sign-in token buckets, one key each, spread over every master.
 * On one Redis the tags change nothing.
 */
export const runsSlot = (prefix: string, group = 0, groups = 1) =>
  group === 0 ? `{${prefix}:runs}` : `{${spreadTag(`${prefix}:runs`, group, groups)}}`;

/** A Redis Cluster has this many hash slots. */
const SLOTS = 16384;

/** CRC16-CCITT (XMODEM), as Redis Cluster hashes a key's tag into a slot. */
export function keySlot(tag: string): number {
  let crc = 0;
  for (const byte of Buffer.from(tag)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % SLOTS;
}

/** The slot of a key: its hash tag's (the first `{...}` holding something), else the whole key's. */
export function slotOfKey(key: string): number {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return keySlot(close > open + 1 ? key.slice(open + 1, close) : key);
}

const spreadTags = new Map<string, string>();

/**
 * The tag of group `group` of `groups`: `<base>:<group>`, with a suffix found so that its slot falls in the middle
 * of the `group`-th of `groups` equal parts of the slot range, counted from the part the base's own slot (group 0's)
 * falls in. A cluster whose masters split the slots evenly (as `redis-cli --cluster create` does) and as many as the
 * groups, or a multiple, then serves each group from a master of its own.
 */
function spreadTag(base: string, group: number, groups: number): string {
  const key = `${base}\0${group}\0${groups}`;
  let tag = spreadTags.get(key);
  if (tag === undefined) {
    const part = SLOTS / groups;
    const target = ((Math.floor(keySlot(base) / part) + group) % groups) * part + part / 2;
    tag = `${base}:${group}`;
    for (let salt = 1; Math.abs(keySlot(tag) - target) > part / 4; salt++) tag = `${base}:${group}:${salt}`;
    spreadTags.set(key, tag);
  }
  return tag;
}
export const ticksSlot = (prefix: string) => `{${prefix}:ticks}`;

const MASK_64 = (1n << 64n) - 1n;

/** FNV-1a, 64 bits: the same number for a tenant id in every process. */
function fnv1a64(text: string): bigint {
  let hash = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) hash = ((hash ^ BigInt(text.charCodeAt(i))) * 0x100000001b3n) & MASK_64;
  return hash;
}

/**
 * Jump consistent hash (Lamping and Veach): going from n groups to n + 1 moves a tenant only into the new group, and
 * only 1/(n + 1) of them.
 */
function jumpHash(key: bigint, buckets: number): number {
  let bucket = -1;
  let next = 0;
  while (next < buckets) {
    bucket = next;
    key = (key * 2862933555777941757n + 1n) & MASK_64;
    next = Math.floor(((bucket + 1) * 2 ** 31) / Number((key >> 33n) + 1n));
  }
  return bucket;
}

/**
 * Which of `groups` slot groups a tenant's runs go through: the one an operator placed it in, or its stable hash's.
 */
export function runGroupOf(tenantId: string, groups: number, placed: Readonly<Record<string, number>> = {}): number {
  const chosen = placed[tenantId];
  if (chosen !== undefined && chosen < groups) return chosen;
  return groups === 1 ? 0 : jumpHash(fnv1a64(tenantId), groups);
}
