/** The keyring (secrets sealed with AES-256-GCM under key ids) and the redaction of opened secrets. */
export { alertChannelContext, destinationContext, Keyring, type SealedValue, secretContext } from './keyring.ts';
export { MASK, MIN_SECRET_LENGTH, SecretRedactor } from './redact.ts';
