/** Scopes a tenant client can hold; a route names the one it needs. */
export const tenantScopes = {
  'flows:read': 'Read editable flows, published flows and their versions.',
  'flows:write': 'Create, change, delete, validate, publish, activate and deactivate flows.',
  'variables:read': 'Read global variables.',
  'variables:write': 'Create, replace and delete global variables.',
  'secrets:read': 'List secret variables (names and fingerprints, never values).',
  'secrets:write': 'Create, replace and delete secret variables.',
  'runs:read': 'Read runs and their steps.',
  'messages:read': 'Read inbound messages, the backlog and blocked topics.',
  'messages:write': 'Replay messages, release or discard held ones, block and unblock topics.',
  'batches:read': 'Read batches (polls) and their tasks.',
  'batches:write': 'Retry the failed tasks of a batch.',
  'dataspaces:read': 'Read data spaces and their documents.',
  'dataspaces:write': 'Create, replace, import and delete data spaces and documents.',
  'destinations:read': 'Read destinations (settings, and which credentials are set).',
  'destinations:write': 'Create, replace and delete destinations and their credentials.',
  'alerts:read': 'Read alert channels, alert rules and the alerts sent.',
  'alerts:write': 'Create and delete alert channels; create, change and delete alert rules.',
  'environments:write': "Create and delete the tenant's environments (deleting one deletes everything kept in it).",
} as const;

export const operatorScope = 'platform:admin';

export type Scope = keyof typeof tenantScopes | typeof operatorScope;

export const allTenantScopes = Object.keys(tenantScopes) as Array<keyof typeof tenantScopes>;

export function isScope(value: string): value is Scope {
  return value === operatorScope || value in tenantScopes;
}
