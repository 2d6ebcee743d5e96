import type { IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import zlib from 'node:zlib';

/**
 * A whole HTTP body, read under a size limit and decoded from its content coding: the same rules
 * for what flow URLs take in and for what http.request gets back.
 */

/** A body over the limit: as declared by Content-Length, as received, or once decoded. */
export class BodyTooLargeError extends Error {
  constructor(
    readonly limit: number,
    readonly stage: 'declared' | 'received' | 'decoded',
  ) {
    super(`body exceeds ${limit} bytes${stage === 'decoded' ? ' once decoded' : ''}`);
  }
}

/** Reads the body; rejects with `BodyTooLargeError` as soon as it is over `limit`, or with the stream's error. */
export function readBody(incoming: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = incoming.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit)
    return Promise.reject(new BodyTooLargeError(limit, 'declared'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      incoming.off('data', onData);
      reject(new BodyTooLargeError(limit, 'received'));
    };
    incoming.on('data', onData);
    incoming.once('error', reject);
    incoming.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
  });
}

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);
const inflateRaw = promisify(zlib.inflateRaw);
const brotli = promisify(zlib.brotliDecompress);

/** The content codings `decodeBody` undoes. */
export const isDecodable = (encoding: string) =>
  ['identity', 'gzip', 'x-gzip', 'deflate', 'br'].includes(encoding.trim().toLowerCase());

/**
 * Undoes a content coding (other codings are returned as they are). More than `limit` bytes once
 * decoded rejects with `BodyTooLargeError`, so a compression bomb costs no memory; a corrupt body
 * rejects with zlib's error.
 */
export async function decodeBody(encoding: string | undefined, body: Buffer, limit: number): Promise<Buffer> {
  if (!encoding || body.length === 0) return body;
  const options = { maxOutputLength: limit };
  try {
    switch (encoding.trim().toLowerCase()) {
      case 'gzip':
      case 'x-gzip':
        return await gunzip(body, options);
      // "deflate" is meant to be zlib-wrapped, but some senders send it raw.
      case 'deflate':
        return await inflate(body, options).catch(() => inflateRaw(body, options));
      case 'br':
        return await brotli(body, options);
      default:
        return body;
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError)
      throw new BodyTooLargeError(limit, 'decoded');
    throw error;
  }
}
