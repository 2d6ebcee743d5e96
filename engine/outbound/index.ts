/** Outbound HTTP: the client operations share, body limits, the address policy. */
export { BodyTooLargeError, decodeBody, isDecodable, readBody } from './http-body.ts';
export { type AddressRefusal, bodyValue, HttpClient, MAX_RESPONSE_BYTES, retryAfter, where } from './http-client.ts';
export { addressRanges, nonPublicRefusal, unreachableFromOutside } from './network.ts';
