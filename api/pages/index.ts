/**
 * What a person looks at: the API reference (/docs), the operators' dashboard, a run's page.
 */
export { DASHBOARD_PATH, dashboardRoutes, dashboardSignIn, SIGN_IN_PATH } from './dashboard.ts';
export { renderDocs } from './docs.ts';
export { runPageRoutes } from './run-page.ts';
