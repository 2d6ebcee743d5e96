/** Tenants' alerts: rules checked, alerts recorded and sent (signed webhooks, Slack), by the workers. */
export { type AlertPayload, newWebhookSecret } from './alert-message.ts';
export { AlertSender } from './alert-sender.ts';
export { AlertWatcher, type AlertWatcherOptions } from './alert-watcher.ts';
