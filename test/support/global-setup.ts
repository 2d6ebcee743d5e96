import { fetchAdminSchemas } from './shopify-admin-schema.ts';

/** Runs once before the test files: fetches what several files share. */
export default function setup() {
  fetchAdminSchemas();
}
