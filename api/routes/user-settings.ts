import { ValidationError, userSettingsSchema } from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import { defineRoute } from '../route.ts';

const settingsSchema = userSettingsSchema.properties.settings;
const DEFAULTS = Object.fromEntries(
  Object.entries(settingsSchema.properties).map(([name, property]) => [name, property.default]),
) as { timezone: string; locale: string; pageSize: number };

/** Settings per user (seed tag UserSettings): the token's subject, within its tenant. */
export function userSettingsRoutes({ store }: ApiContext) {
  const path = '/api/v1/user-settings';
  return [
    defineRoute({
      method: 'get',
      path,
      tag: 'UserSettings',
      summary: "The calling user's settings (the defaults until they are saved)",
      responses: { 200: { description: 'The settings.', schema: userSettingsSchema } },
      handle: async ({ tenantId, principal }) => ({
        body: (await store.getUserSettings(tenantId, principal.subject)) ?? {
          subject: principal.subject,
          settings: DEFAULTS,
          updatedAt: null,
        },
      }),
    }),
    defineRoute({
      method: 'put',
      path,
      tag: 'UserSettings',
      summary: "Replace the calling user's settings (fields left out take their defaults)",
      body: { ...settingsSchema, required: [] },
      responses: { 200: { description: 'The settings.', schema: userSettingsSchema } },
      async handle({ tenantId, principal, body }) {
        try {
          new Intl.DateTimeFormat('en-US', { timeZone: body.timezone });
        } catch {
          throw new ValidationError('Invalid settings', [
            { path: '$.body.timezone', message: 'is not an IANA time zone' },
          ]);
        }
        try {
          new Intl.Locale(body.locale!);
        } catch {
          throw new ValidationError('Invalid settings', [
            { path: '$.body.locale', message: 'is not a BCP 47 language tag' },
          ]);
        }
        return { body: await store.putUserSettings(tenantId, principal.subject, { ...DEFAULTS, ...body }) };
      },
    }),
  ];
}
