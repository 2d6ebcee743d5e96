import type { StateKind, StateLimit, Store } from '../engine/store/index.ts';
import { loadPgDriver, PgliteDriver, SqlStore } from '../engine/store/sql/index.ts';
import { Keyring } from '../engine/secrets/index.ts';
import type { Config } from './config/config.ts';
import { DataDirLock, embeddedKeyring, embeddedStorePath } from './data-dir.ts';

/**
 * The embedded store (PGlite under DATA_DIR, with its lock) or PostgreSQL at DATABASE_URL.
 * `workerStore` is the store for background work: on PGlite, the same database in the background
 * lane, so that requests are answered before runs are worked off; on PostgreSQL, the same store.
 */
export async function openStore(
  config: Config,
): Promise<{ store: Store; workerStore: Store; keyring: Keyring; lock?: DataDirLock }> {
  if (config.databaseUrl) {
    if (!config.secretsKey)
      throw new Error(
        'SECRETS_KEY is required with DATABASE_URL: every process must seal and open secrets with the same keys',
      );
    const PgDriver = await loadPgDriver();
    const store = await SqlStore.open(
      new PgDriver({ connectionString: config.databaseUrl, schema: config.databaseSchema }),
    );
    return { store, workerStore: store, keyring: Keyring.parse(config.secretsKey) };
  }
  const lock = DataDirLock.acquire(config.dataDir);
  try {
    const driver = await PgliteDriver.open(embeddedStorePath(config.dataDir), config.databaseSchema);
    const store = await SqlStore.open(driver);
    const keyring = config.secretsKey ? Keyring.parse(config.secretsKey) : embeddedKeyring(config.dataDir);
    return { store, workerStore: new SqlStore(driver.background()), keyring, lock };
  } catch (error) {
    lock.release();
    throw error;
  }
}

/** The store opened, told the deployment's limits on what each tenant keeps and how long history is kept. */
export async function openConfiguredStore(config: Config) {
  const opened = await openStore(config);
  await opened.store.setStateLimits(stateLimits(config));
  await opened.store.setRetentionPolicy({
    days: config.retentionDays,
    failedDays: config.retentionFailedDays,
    maxDays: config.retentionMaxDays,
  });
  return opened;
}

/** The settings' limits on what each tenant keeps (0: none), for the store to enforce. */
function stateLimits(config: Config): StateLimit[] {
  const limit = (kind: StateKind, items: [number, string], bytes?: [number, string]): StateLimit => ({
    kind,
    maxItems: items[0] || null,
    itemsSetting: items[1],
    maxBytes: bytes?.[0] || null,
    bytesSetting: bytes?.[1] ?? null,
  });
  return [
    limit('flows', [config.tenantMaxFlows, 'TENANT_MAX_FLOWS'], [config.tenantMaxFlowBytes, 'TENANT_MAX_FLOW_BYTES']),
    limit(
      'variables',
      [config.tenantMaxVariables, 'TENANT_MAX_VARIABLES'],
      [config.tenantMaxVariableBytes, 'TENANT_MAX_VARIABLE_BYTES'],
    ),
    limit('secrets', [config.tenantMaxSecrets, 'TENANT_MAX_SECRETS']),
    limit('action versions', [config.tenantMaxActionVersions, 'TENANT_MAX_ACTION_VERSIONS']),
    limit('destinations', [config.tenantMaxDestinations, 'TENANT_MAX_DESTINATIONS']),
    limit('data spaces', [config.tenantMaxDataSpaces, 'TENANT_MAX_DATA_SPACES']),
    limit(
      'documents',
      [config.tenantMaxDocuments, 'TENANT_MAX_DOCUMENTS'],
      [config.tenantMaxDocumentBytes, 'TENANT_MAX_DOCUMENT_BYTES'],
    ),
  ];
}
