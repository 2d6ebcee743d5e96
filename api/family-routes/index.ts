/**
 * The routes operation families bring (a vendor's own contract and its tenant routes), served by the API.
 */
export { familyRoutePlatform, familyTenantRoutes, publicFamilyRoutes, publicRoutePaths } from './family-routes.ts';
