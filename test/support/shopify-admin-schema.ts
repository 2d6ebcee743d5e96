import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { buildClientSchema, type GraphQLSchema } from 'graphql';

/**
 * Shopify's real Admin GraphQL schema, as introspection results that `@shopify/dev-mcp` ships.
 * That package pulls in Shopify's CLI and React tooling, so rather than depend on it we fetch its
 * tarball once with `npm pack` (npm checks it against the pinned integrity) and keep only the schemas.
 */
const PACKAGE = '@shopify/dev-mcp@1.16.0';
const INTEGRITY = 'sha512-tqgRnK7sQhjew+htxtleTH23nXB5fZcsrhWgEkomsorGXvLOB2mh2upwZm8uzuTDNTZnqtLMe64yIwh6s2awtw==';
export const ADMIN_API_VERSIONS = ['2025-10', '2026-10'] as const;
export type AdminApiVersion = (typeof ADMIN_API_VERSIONS)[number];

const cacheDir = path.resolve(import.meta.dirname, '../../node_modules/.cache/shopify-admin-schema/1.16.0');
const schemaFile = (version: string) => path.join(cacheDir, `admin_${version}.json.gz`);

/** Makes sure the schemas are on disk; run once before the test files (vitest globalSetup). */
export function fetchAdminSchemas(): void {
  if (ADMIN_API_VERSIONS.every((version) => existsSync(schemaFile(version)))) return;
  const work = mkdtempSync(path.join(os.tmpdir(), 'shopify-dev-mcp-'));
  try {
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', PACKAGE, '--json', '--pack-destination', work], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    );
    if (packed.integrity !== INTEGRITY)
      throw new Error(`${PACKAGE}: integrity ${packed.integrity} is not the pinned one`);
    const members = ADMIN_API_VERSIONS.map((version) => `package/dist/data/admin_${version}.json.gz`);
    execFileSync('tar', ['-xzf', path.join(work, packed.filename), '-C', work, ...members]);
    mkdirSync(cacheDir, { recursive: true });
    for (const version of ADMIN_API_VERSIONS)
      renameSync(path.join(work, `package/dist/data/admin_${version}.json.gz`), schemaFile(version));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

const built = new Map<string, GraphQLSchema>();

export function adminSchema(version: AdminApiVersion): GraphQLSchema {
  let schema = built.get(version);
  if (!schema) {
    fetchAdminSchemas();
    schema = buildClientSchema(JSON.parse(gunzipSync(readFileSync(schemaFile(version))).toString('utf8')).data);
    built.set(version, schema);
  }
  return schema;
}
