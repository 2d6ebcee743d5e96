import { OperationError } from '../model/index.ts';
import type { HttpClient } from '../outbound/index.ts';
import { alertChannelContext, type Keyring } from '../secrets/index.ts';
import type { AlertChannelSecrets, SealedAlertChannel } from '../store/index.ts';
import { type AlertPayload, slackAlert, webhookAlert } from './alert-message.ts';

const MAX_ANSWER_BYTES = 64 * 1024;

/** How one send went: sent (2xx), or why not, and whether sending again cannot help (a refused address). */
export type SendOutcome = { sent: true; status: number } | { sent: false; error: string; permanent: boolean };

/**
 * Sends one alert to one channel: opens its sealed URL (and signing secret), shapes the request for its type
 * and posts it with the deployment's address policy, on the tenant's own sockets.
 */
export class AlertSender {
  constructor(
    private readonly keyring: Keyring,
    private readonly http: HttpClient,
    private readonly timeoutMs: number,
  ) {}

  async send(tenantId: string, channel: SealedAlertChannel, payload: AlertPayload): Promise<SendOutcome> {
    try {
      const secrets: AlertChannelSecrets = JSON.parse(
        this.keyring.open(channel.sealed, alertChannelContext(tenantId, channel.id)),
      );
      const request = channel.type === 'slack' ? slackAlert(payload) : webhookAlert(payload, secrets.secret ?? '');
      const answer = await this.http.forTenant(tenantId).send({
        method: 'POST',
        url: new URL(secrets.url),
        headers: { ...request.headers, 'user-agent': 'Tributary-Alerts' },
        body: request.body,
        timeoutMs: this.timeoutMs,
        maxResponseBytes: MAX_ANSWER_BYTES,
        failure: 'the alert',
      });
      return answer.ok
        ? { sent: true, status: answer.status }
        : { sent: false, error: `answered ${answer.status}`, permanent: false };
    } catch (thrown) {
      return {
        sent: false,
        error: thrown instanceof Error ? thrown.message : String(thrown),
        permanent: thrown instanceof OperationError && thrown.kind === 'permanent',
      };
    }
  }
}
