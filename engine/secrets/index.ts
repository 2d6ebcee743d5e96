/** The keyring: secrets sealed with AES-256-GCM under key ids. */
export { destinationContext, Keyring, type SealedValue, secretContext } from './keyring.ts';
