/** One setting: its environment variable, its JSON Schema (type, bounds, default) and what it means. */
export interface Setting {
  env: string;
  schema: {
    type?: 'integer' | 'string';
    enum?: readonly string[];
    default?: unknown;
    minimum?: number;
    maximum?: number;
    pattern?: string;
  };
  /** Sizes are written as bytes, or with kb or mb. */
  unit?: 'bytes';
  /** What the docs show as the default, where the value alone would not say it. */
  shownDefault?: string;
  description: string;
}

export const MB = 1024 * 1024;

/** A limit on what one tenant keeps: checked in the database as rows are written, whichever way. */
export const stateLimit = (env: string, defaultValue: number, what: string, unit?: 'bytes') =>
  ({
    env,
    schema: { type: 'integer', minimum: 0, default: defaultValue },
    ...(unit ? { unit } : {}),
    shownDefault: `\`${unit ? `${defaultValue / MB}mb` : defaultValue}\` (\`0\`: no limit)`,
    description:
      `${what}${unit ? ' As JSON text.' : ''} Checked in the database as rows are written, whichever way (the API, ` +
      'an operation in a run): a write past it fails, with 409 or a permanent node error naming this setting.',
  }) as const;
