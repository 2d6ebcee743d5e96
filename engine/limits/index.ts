/**
 * What Redis bounds across processes: a tenant's deliveries admitted (token bucket and queued-runs cap), API call
 * rate limits, outbound budgets, maintenance mode.
 */
export { type DeliveryQuota, type QuotaStatus, TenantQuotas } from './admission.ts';
export { MaintenanceMode } from './maintenance.ts';
export { type BudgetStatus, OutboundBudgets } from './outbound-budgets.ts';
export { type Rate, type RateDecision, RateLimiter } from './rate-limiter.ts';
