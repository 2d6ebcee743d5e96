import { userSettingsSchema } from '../../engine/model/index.ts';
import type { ApiContext } from '../context.ts';
import { defineRoute, fromRequest } from '../route-kit/index.ts';

const settingsSchema = userSettingsSchema.properties.settings;

/** Settings per user (tag UserSettings): the token's subject, within its tenant. */
export function userSettingsRoutes({ userSettings }: ApiContext) {
  const path = '/api/v1/user-settings';
  return [
    defineRoute({
      method: 'get',
      path,
      tag: 'UserSettings',
      summary: "The calling user's settings (the defaults until they are saved)",
      responses: { 200: { description: 'The settings.', schema: userSettingsSchema } },
      handle: async ({ tenantId, principal }) => ({ body: await userSettings.get(tenantId, principal.subject) }),
    }),
    defineRoute({
      method: 'put',
      path,
      tag: 'UserSettings',
      summary: "Replace the calling user's settings (fields left out take their defaults)",
      body: { ...settingsSchema, required: [] },
      responses: { 200: { description: 'The settings.', schema: userSettingsSchema } },
      handle: async ({ tenantId, principal, body }) => ({
        body: await fromRequest('$.body', () => userSettings.replace(tenantId, principal.subject, body)),
      }),
    }),
  ];
}
