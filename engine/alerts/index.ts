/** Tenants' alerts: rules checked, alerts recorded and sent (signed webhooks, Slack), by the workers. */
export {
  type AlertPayload,
  alertPayload,
  alertText,
  newWebhookSecret,
  slackAlert,
  webhookAlert,
  webhookSignature,
} from './alert-message.ts';
export { AlertSender, type SendOutcome } from './alert-sender.ts';
export { AlertWatcher, type AlertWatcherOptions, MAX_ALERT_ATTEMPTS } from './alert-watcher.ts';
