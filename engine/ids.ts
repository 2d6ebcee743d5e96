import { randomBytes } from 'node:crypto';

/**
 * UUIDv7 (RFC 9562): time-ordered, so ids sort by creation and serve as stable page cursors.
 * The random tail makes ids from several processes in one millisecond distinct.
 */
export function newId(): string {
  const bytes = randomBytes(16);
  const ms = Date.now();
  bytes.writeUIntBE(ms, 0, 6);
  bytes[6] = 0x70 | (bytes[6] & 0x0f);
  bytes[8] = 0x80 | (bytes[8] & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
