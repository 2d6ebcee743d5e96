/** JsonChecker's thread: checks the JSON texts it is sent, one at a time, off the event loop that received them. */
import { parentPort } from 'node:worker_threads';
import { checkJsonText, type JsonTextFault } from '../model/index.ts';

export interface CheckRequest {
  id: number;
  bytes: Uint8Array;
}

export interface CheckReply {
  id: number;
  fault?: JsonTextFault;
}

const port = parentPort!;
port.on('message', ({ id, bytes }: CheckRequest) => {
  const fault = checkJsonText(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  port.postMessage((fault ? { id, fault } : { id }) satisfies CheckReply);
});
