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

/**
 * UUIDv7 (RFC 9562): time-ordered, so ids sort by creation and serve as stable page cursors.
 * The random tail makes ids from several processes in one millisecond distinct.
 */
export function newId(): string {
  const bytes = Buffer.allocUnsafe(16);
  bytes.writeUIntBE(Date.now(), 0, 6);
  randomTail().copy(bytes, 6);
  bytes[6] = 0x70 | (bytes[6] & 0x0f);
  bytes[8] = 0x80 | (bytes[8] & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
