/** The product's version, as `tributary --version` and `/api/v1/version` say it. */
export const VERSION = '0.1.0';
