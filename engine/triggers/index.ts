/** Webhook verification and signatures, schedules. */
export { intervalMs, repeatOptions, scheduleErrors } from './schedule.ts';
export {
  type CompiledWebhook,
  compileWebhook,
  constantTimeEqual,
  GENERIC_TOPIC_HEADERS,
  type Headers,
  headerValue,
  keptHeaders,
  topicOf,
  verifyDelivery,
  type WebhookSignature,
} from './webhook.ts';
