/** Outbound HTTP: the client operations share, body limits, the address policy, the gate of outbound budgets. */
export type {
  BudgetChoice,
  BudgetLimits,
  BudgetGrant,
  BudgetOutcome,
  BudgetPrice,
  BudgetWaits,
  EnterOptions,
  OutboundGate,
} from './budget-gate.ts';
export { BodyTooLargeError, decodeBody, isDecodable, readBody } from './http-body.ts';
export {
  type AddressRefusal,
  type AnswerPricer,
  bodyValue,
  HttpClient,
  type InboundResponse,
  MAX_RESPONSE_BYTES,
  type OutboundRequest,
  retryAfter,
  type Transport,
  where,
} from './http-client.ts';
export { matchesRecorded, RecordedAnswers, requestLine } from './recorded-answers.ts';
export { keptHeaders, MASKED, recordedExchange } from './recorded-exchange.ts';
export { addressRanges, nonPublicRefusal, unreachableFromOutside } from './network.ts';
