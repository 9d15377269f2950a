type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * The access rule of one SCIM route, after WSO2's resource access control table
 * (`resource-access-control-v2.xml`). `scopes: []` means any valid token; `secured: false`
 * means no token at all.
 */
export type AccessRule = {
  /** The route pattern as registered with Fastify, e.g. `/scim2/Users/:id`. */
  route: string;
  methods: readonly Method[];
  scopes: readonly string[];
  secured: boolean;
  /** Operation scopes: holding any of them lets the request in, to be checked per operation. */
  operationScopes?: readonly string[];
};

const rule = (
  methods: readonly Method[],
  route: string,
  scopes: readonly string[],
  extra: Partial<Pick<AccessRule, 'secured' | 'operationScopes'>> = {},
): AccessRule => ({
  route,
  methods,
  scopes,
  secured: extra.secured ?? true,
  ...(extra.operationScopes ? { operationScopes: extra.operationScopes } : {}),
});

export const ROLE_OPERATION_SCOPES = {
  permissions: 'internal_role_mgt_permissions_update',
  users: 'internal_role_mgt_users_update',
  groups: 'internal_role_mgt_groups_update',
} as const;

export const BULK_OPERATION_SCOPES = [
  'internal_bulk_user_create',
  'internal_bulk_user_update',
  'internal_bulk_user_delete',
  'internal_bulk_group_create',
  'internal_bulk_group_update',
  'internal_bulk_group_delete',
  'internal_bulk_role_create',
  'internal_bulk_role_update',
  'internal_bulk_role_delete',
] as const;

/**
 * Granting permissions the caller does not hold (through a role's permissions, users or groups,
 * or a group that carries roles) needs the role-management scope of the change, whichever
 * endpoint does it.
 */
export const ROLE_MANAGEMENT_SCOPES = {
  create: 'internal_role_mgt_create',
  update: 'internal_role_mgt_update',
} as const;

const roleOps = Object.values(ROLE_OPERATION_SCOPES);
const DISCOVERY_METHODS: readonly Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * One rule per route the SCIM plugin registers, keyed by the route pattern the router matched,
 * never by the raw URL: a percent-encoded or otherwise disguised path resolves to the route
 * that serves it, and so to that route's rule. A route without a rule is refused.
 */
export const ACCESS_RULES: readonly AccessRule[] = [
  rule(['POST'], '/scim2/.search', ['internal_user_mgt_list', 'internal_group_mgt_view']),
  rule(['GET'], '/scim2/Users', ['internal_user_mgt_list']),
  rule(['POST'], '/scim2/Users/.search', ['internal_user_mgt_list']),
  rule(['POST'], '/scim2/Users', ['internal_user_mgt_create']),
  rule(['GET'], '/scim2/Users/:id', ['internal_user_mgt_view']),
  rule(['PUT', 'PATCH'], '/scim2/Users/:id', ['internal_user_mgt_update']),
  rule(['DELETE'], '/scim2/Users/:id', ['internal_user_mgt_delete']),
  rule(['GET'], '/scim2/Groups', ['internal_group_mgt_view']),
  rule(['POST'], '/scim2/Groups/.search', ['internal_group_mgt_view']),
  rule(['POST'], '/scim2/Groups', ['internal_group_mgt_create']),
  rule(['GET'], '/scim2/Groups/:id', ['internal_group_mgt_view']),
  rule(['PUT', 'PATCH'], '/scim2/Groups/:id', ['internal_group_mgt_update']),
  rule(['DELETE'], '/scim2/Groups/:id', ['internal_group_mgt_delete']),
  rule(['GET'], '/scim2/v2/Roles', ['internal_role_mgt_view']),
  rule(['POST'], '/scim2/v2/Roles/.search', ['internal_role_mgt_view']),
  rule(['POST'], '/scim2/v2/Roles', ['internal_role_mgt_create'], { operationScopes: roleOps }),
  rule(['GET'], '/scim2/v2/Roles/:id', ['internal_role_mgt_view']),
  rule(['PUT', 'PATCH'], '/scim2/v2/Roles/:id', ['internal_role_mgt_update'], {
    operationScopes: roleOps,
  }),
  rule(['DELETE'], '/scim2/v2/Roles/:id', ['internal_role_mgt_delete']),
  // Roles v1 serves the same roles under the same scopes.
  rule(['GET'], '/scim2/Roles', ['internal_role_mgt_view']),
  rule(['POST'], '/scim2/Roles/.search', ['internal_role_mgt_view']),
  rule(['POST'], '/scim2/Roles', ['internal_role_mgt_create'], { operationScopes: roleOps }),
  rule(['GET'], '/scim2/Roles/:id', ['internal_role_mgt_view']),
  rule(['PUT', 'PATCH'], '/scim2/Roles/:id', ['internal_role_mgt_update'], {
    operationScopes: roleOps,
  }),
  rule(['DELETE'], '/scim2/Roles/:id', ['internal_role_mgt_delete']),
  rule(['GET'], '/scim2/Agents', ['internal_agent_mgt_list']),
  rule(['POST'], '/scim2/Agents/.search', ['internal_agent_mgt_list']),
  rule(['POST'], '/scim2/Agents', ['internal_agent_mgt_create']),
  rule(['GET'], '/scim2/Agents/:id', ['internal_agent_mgt_view']),
  rule(['PUT', 'PATCH'], '/scim2/Agents/:id', ['internal_agent_mgt_update']),
  rule(['DELETE'], '/scim2/Agents/:id', ['internal_agent_mgt_delete']),
  rule(['POST'], '/scim2/Bulk', ['internal_bulk_resource_create'], {
    operationScopes: BULK_OPERATION_SCOPES,
  }),
  // Discovery: writes are answered 405 by the routes, under the same access as reads.
  ...['/scim2/ServiceProviderConfig', '/scim2/ResourceTypes', '/scim2/ResourceTypes/:id'].map(
    (route) => rule(DISCOVERY_METHODS, route, [], { secured: false }),
  ),
  ...['/scim2/Schemas', '/scim2/Schemas/:id'].map((route) => rule(DISCOVERY_METHODS, route, [])),
  rule(['GET', 'PUT', 'PATCH'], '/scim2/Me', ['internal_login']),
  // Not SCIM: the Prometheus metrics, for a scraper holding this scope alone.
  rule(['GET'], '/metrics', ['internal_metrics_view']),
];

/** The rule of the route the router matched; undefined (refused) when the route has none. */
export function findAccessRule(method: string, route: string): AccessRule | undefined {
  // Fastify answers HEAD with the GET handler: same data, same rule.
  const asked = (method === 'HEAD' ? 'GET' : method) as Method;
  // `/scim2/Users/` is the collection `/scim2/Users` (routes.ts registers both).
  const collection = route.length > 1 ? route.replace(/\/$/, '') : route;
  return ACCESS_RULES.find((r) => r.route === collection && r.methods.includes(asked));
}

/** Every scope the IdP knows about: what apps may be authorized for and roles may grant. */
export const KNOWN_SCOPES: readonly string[] = [
  ...new Set([
    ...ACCESS_RULES.flatMap((r) => [...r.scopes, ...(r.operationScopes ?? [])]),
    'internal_login',
  ]),
].sort();

export type AccessDecision =
  | { allowed: true; granted: boolean; scopes: ReadonlySet<string> }
  | { allowed: false };

/**
 * WSO2's valve: granted when the token has every scope of the entry; otherwise still let in
 * when it holds one of the entry's operation scopes, leaving each operation to be checked.
 */
export function decideAccess(rule: AccessRule, tokenScopes: ReadonlySet<string>): AccessDecision {
  const granted = rule.scopes.every((s) => tokenScopes.has(s));
  if (granted) return { allowed: true, granted, scopes: tokenScopes };
  if (rule.operationScopes?.some((s) => tokenScopes.has(s))) {
    return { allowed: true, granted, scopes: tokenScopes };
  }
  return { allowed: false };
}
