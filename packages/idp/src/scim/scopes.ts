type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * One entry of WSO2's resource access control table (research §1.2).
 * `scopes: []` means any valid token; `secured: false` means no token at all.
 */
export type AccessRule = {
  methods: readonly Method[] | 'any';
  path: RegExp;
  scopes: readonly string[];
  secured: boolean;
  /** Operation scopes: holding any of them lets the request in, to be checked per operation. */
  operationScopes?: readonly string[];
};

const ID = '[^/]+';
const ALL: readonly Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

const rule = (
  methods: AccessRule['methods'],
  path: string,
  scopes: readonly string[],
  extra: Partial<Pick<AccessRule, 'secured' | 'operationScopes'>> = {},
): AccessRule => ({
  methods,
  path: new RegExp(`^${path}$`),
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

const roleOps = Object.values(ROLE_OPERATION_SCOPES);

/** In file order; the first entry whose method and path match decides (research §1.2). */
export const ACCESS_RULES: readonly AccessRule[] = [
  rule(['POST'], '/scim2/Users/\\.search', ['internal_user_mgt_list']),
  rule(['POST'], '/scim2/Users(.*)', ['internal_user_mgt_create']),
  rule(['GET'], '/scim2/Users/?', ['internal_user_mgt_list']),
  rule(['GET'], `/scim2/Users/${ID}`, ['internal_user_mgt_view']),
  rule(['PUT', 'PATCH'], `/scim2/Users/${ID}`, ['internal_user_mgt_update']),
  rule(['DELETE'], `/scim2/Users/${ID}`, ['internal_user_mgt_delete']),
  rule(['POST'], '/scim2/Groups/\\.search', ['internal_group_mgt_view']),
  rule(['POST'], '/scim2/Groups/?', ['internal_group_mgt_create']),
  rule(['GET'], '/scim2/Groups(/.*)?', ['internal_group_mgt_view']),
  rule(['PUT', 'PATCH'], `/scim2/Groups/${ID}`, ['internal_group_mgt_update']),
  rule(['DELETE'], `/scim2/Groups/${ID}`, ['internal_group_mgt_delete']),
  rule(['POST'], '/scim2/v2/Roles/\\.search', ['internal_role_mgt_view']),
  rule(['GET'], '/scim2/v2/Roles(.*)', ['internal_role_mgt_view']),
  rule(['POST'], '/scim2/v2/Roles/?', ['internal_role_mgt_create'], { operationScopes: roleOps }),
  rule(['PUT', 'PATCH'], `/scim2/v2/Roles/${ID}`, ['internal_role_mgt_update'], {
    operationScopes: roleOps,
  }),
  rule(['DELETE'], `/scim2/v2/Roles/${ID}`, ['internal_role_mgt_delete']),
  rule(['POST'], '/scim2/Roles/\\.search', ['internal_role_mgt_view']),
  rule(['GET'], '/scim2/Roles(/.*)?', ['internal_role_mgt_view']),
  rule(['POST'], '/scim2/Roles/?', ['internal_role_mgt_create'], { operationScopes: roleOps }),
  rule(['PUT', 'PATCH'], `/scim2/Roles/${ID}`, ['internal_role_mgt_update'], {
    operationScopes: roleOps,
  }),
  rule(['DELETE'], `/scim2/Roles/${ID}`, ['internal_role_mgt_delete']),
  rule(['POST'], '/scim2/Agents/\\.search', ['internal_agent_mgt_list']),
  rule(['GET'], '/scim2/Agents/?', ['internal_agent_mgt_list']),
  rule(['POST'], '/scim2/Agents/?', ['internal_agent_mgt_create']),
  rule(['GET'], `/scim2/Agents/${ID}`, ['internal_agent_mgt_view']),
  rule(['PUT', 'PATCH'], `/scim2/Agents/${ID}`, ['internal_agent_mgt_update']),
  rule(['DELETE'], `/scim2/Agents/${ID}`, ['internal_agent_mgt_delete']),
  rule(['POST'], '/scim2/Bulk(.*)', ['internal_bulk_resource_create'], {
    operationScopes: BULK_OPERATION_SCOPES,
  }),
  rule('any', '/scim2/ServiceProviderConfig(.*)', [], { secured: false }),
  rule('any', '/scim2/ResourceTypes(.*)', [], { secured: false }),
  rule('any', '/scim2/Schemas(.*)', []),
  rule(['GET', 'PUT', 'PATCH'], '/scim2/Me', ['internal_login']),
];

/** Paths not in the table still need a valid token (secure default). */
const FALLBACK: AccessRule = rule(ALL, '.*', []);

export function findAccessRule(method: string, path: string): AccessRule {
  return (
    ACCESS_RULES.find(
      (r) => (r.methods === 'any' || r.methods.includes(method as Method)) && r.path.test(path),
    ) ?? FALLBACK
  );
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
