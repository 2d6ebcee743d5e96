import { randomFillSync } from 'node:crypto';

const POOL_SIZE = 16 * 256;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;

/** 10 random bytes from a pool refilled 256 ids at a time: one system call per 256 ids instead of one each. */
function randomTail(): Buffer {
  if (offset + 10 > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + 10);
  offset += 10;
  return bytes;
}

let lastMs = 0;
let counter = 0;

/**
 * UUIDv7 (RFC 9562): time-ordered, so ids sort by creation and serve as stable page cursors.
 * Within a process they are strictly increasing: the 12 bits after the timestamp count ids made in
 * the same millisecond (from a random start, borrowing the next millisecond on overflow), so
 * messages and runs sort in the order they arrived. The random tail keeps processes apart.
 */
export function newId(): string {
  const tail = randomTail();
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    counter = tail[9] << 3;
  } else if (++counter > 0xfff) {
    lastMs += 1;
    counter = 0;
  }
  const bytes = Buffer.allocUnsafe(16);
  bytes.writeUIntBE(lastMs, 0, 6);
  bytes[6] = 0x70 | (counter >> 8);
  bytes[7] = counter & 0xff;
  tail.copy(bytes, 8, 0, 8);
  bytes[8] = 0x80 | (bytes[8] & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The smallest id made at `epochMs` or later: a lower bound for ranges of time-ordered ids. */
export function idAt(epochMs: number): string {
  const hex = Math.max(0, Math.floor(epochMs)).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}

/** When a time-ordered id was made, in ms since 1970 (its first 48 bits). */
export const idTime = (id: string): number => Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
