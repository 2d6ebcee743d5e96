import { userSettingsSchema, type UserSettings, ValidationError } from '../model/index.ts';
import type { Store } from '../store/index.ts';

const settingsSchema = userSettingsSchema.properties.settings;
/** What a user has until they save their own. */
const DEFAULTS = Object.fromEntries(
  Object.entries(settingsSchema.properties).map(([name, property]) => [name, property.default]),
) as UserSettings['settings'];

/** Settings per user (a token's subject, within its tenant): time zone, locale, page size. */
export class UserSettingsService {
  constructor(private readonly store: Store) {}

  async get(
    tenantId: string,
    subject: string,
  ): Promise<UserSettings | { subject: string; settings: UserSettings['settings']; updatedAt: null }> {
    return (await this.store.getUserSettings(tenantId, subject)) ?? { subject, settings: DEFAULTS, updatedAt: null };
  }

  /** Replaced; a field left out takes its default. Field errors from `$`. */
  replace(tenantId: string, subject: string, given: Partial<UserSettings['settings']>): Promise<UserSettings> {
    const settings = { ...DEFAULTS, ...given };
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: settings.timezone });
    } catch {
      throw new ValidationError('Invalid settings', [{ path: '$.timezone', message: 'is not an IANA time zone' }]);
    }
    try {
      new Intl.Locale(settings.locale);
    } catch {
      throw new ValidationError('Invalid settings', [{ path: '$.locale', message: 'is not a BCP 47 language tag' }]);
    }
    return this.store.putUserSettings(tenantId, subject, settings);
  }
}
