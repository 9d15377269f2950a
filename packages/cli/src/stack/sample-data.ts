import { randomToken } from '@mcp-identity/common';
import type { BootstrapDocument } from '@mcp-identity/idp';
import { gatewayRuleScopes } from './gateway-rules.js';
import type { StackLayout } from './layout.js';
import type { StackSecrets } from './secrets.js';

export const READ_ONLY_SCOPES = ['internal_user_mgt_view', 'internal_user_mgt_list'];

const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const CUSTOM = 'urn:scim:schemas:extension:custom:User';

interface SampleUser {
  userName: string;
  givenName: string;
  familyName: string;
  department: string;
  region: string;
  customerTier: string;
  employeeNumber: string;
}

const USERS: SampleUser[] = [
  {
    userName: 'alice',
    givenName: 'Alice',
    familyName: 'Nguyen',
    department: 'Engineering',
    region: 'EU-West',
    customerTier: 'gold',
    employeeNumber: 'E1001',
  },
  {
    userName: 'bob',
    givenName: 'Bob',
    familyName: 'Okafor',
    department: 'Sales',
    region: 'US-East',
    customerTier: 'silver',
    employeeNumber: 'E1002',
  },
  {
    userName: 'carol',
    givenName: 'Carol',
    familyName: 'Silva',
    department: 'Support',
    region: 'APAC',
    customerTier: 'bronze',
    employeeNumber: 'E1003',
  },
  {
    userName: 'dave',
    givenName: 'Dave',
    familyName: 'Kowalski',
    department: 'Engineering',
    region: 'US-West',
    customerTier: 'gold',
    employeeNumber: 'E1004',
  },
  {
    userName: 'erin',
    givenName: 'Erin',
    familyName: 'Haddad',
    department: 'Finance',
    region: 'EU-West',
    customerTier: 'platinum',
    employeeNumber: 'E1005',
  },
];

/** A SCIM user body as the bootstrap document holds it. */
type BootstrapUser = NonNullable<BootstrapDocument['users']>[number];

function scimUser(user: SampleUser): BootstrapUser {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', ENTERPRISE, CUSTOM],
    userName: user.userName,
    // Sample people never log in; each gets an unguessable password nobody knows.
    password: `${randomToken(18)}Aa1!`,
    name: { givenName: user.givenName, familyName: user.familyName },
    emails: [{ value: `${user.userName}@example.com`, primary: true, type: 'work' }],
    addresses: [{ type: 'work', formatted: user.region }],
    [ENTERPRISE]: { department: user.department, employeeNumber: user.employeeNumber },
    [CUSTOM]: { customerTier: user.customerTier },
  };
}

/** An RFC 8707 API resource as the IdP's bootstrap file declares it (`apiResources`). */
export type ApiResourceBootstrap = NonNullable<BootstrapDocument['apiResources']>[number];

/** The host spellings a loopback listener answers to (the gateway's `Listener` takes each). */
const LOOPBACK_SPELLINGS = ['localhost', '127.0.0.1', '[::1]'];

/**
 * The resource URL under every loopback host spelling: the gateway names its resource after
 * the Host a client used (RFC 9728 §3.3), and RFC 8707 identifiers are compared exactly, so
 * each spelling is its own API resource.
 */
function loopbackSpellings(url: string): string[] {
  return LOOPBACK_SPELLINGS.map((host) => {
    const spelled = new URL(url);
    spelled.hostname = host;
    return spelled.href;
  });
}

/**
 * One API resource per gateway listener and loopback spelling, offering the scopes the
 * gateway's rules use, so a standard MCP client that found the gateway's metadata gets a
 * token for it after its user signs in. No application is listed: the backend must never get
 * the gateway's audience.
 */
export function gatewayApiResources(layout: StackLayout): ApiResourceBootstrap[] {
  const scopes = gatewayRuleScopes();
  return [
    { url: layout.gateway.mcpUrl, name: 'SCIM MCP gateway (HTTPS)' },
    { url: layout.gateway.plainMcpUrl, name: 'SCIM MCP gateway (HTTP)' },
  ].flatMap(({ url, name }) =>
    loopbackSpellings(url).map((identifier) => ({
      identifier,
      name,
      scopes,
      dynamicClients: true,
      applications: [],
    })),
  );
}

/** A person who can sign in and only read users: the role `user-auditor` (list and view). */
function readOnlyUser(secrets: StackSecrets): BootstrapUser {
  const { userName, password } = secrets.readOnlyUser;
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName,
    password,
    name: { givenName: 'Read', familyName: 'Only' },
    emails: [{ value: `${userName}@example.com`, primary: true, type: 'work' }],
  };
}

/**
 * What the embedded identity provider holds after bootstrap: the two
 * machine-to-machine applications (client and backend: all SCIM scopes, JWT tokens), the
 * custom attributes the profile tool writes, and sample people, groups and roles.
 */
export function stackBootstrap(
  secrets: StackSecrets,
  apiResources: ApiResourceBootstrap[],
): BootstrapDocument {
  return {
    apiResources,
    customAttributes: [
      { name: 'customerTier', type: 'string' },
      { name: 'contractEndDate', type: 'string' },
    ],
    applications: [
      {
        name: 'MCP client application',
        clientId: secrets.clientApp.clientId,
        clientSecret: secrets.clientApp.clientSecret,
        grantTypes: ['client_credentials'],
        scopes: '*',
      },
      {
        name: 'SCIM MCP server backend',
        clientId: secrets.backendApp.clientId,
        clientSecret: secrets.backendApp.clientSecret,
        grantTypes: ['client_credentials'],
        scopes: '*',
      },
      {
        name: 'Read-only SCIM backend (demo)',
        clientId: secrets.readOnlyApp.clientId,
        clientSecret: secrets.readOnlyApp.clientSecret,
        grantTypes: ['client_credentials'],
        scopes: READ_ONLY_SCOPES,
      },
    ],
    users: [...USERS.map(scimUser), readOnlyUser(secrets)],
    groups: [
      { displayName: 'engineering', members: ['alice', 'dave'] },
      { displayName: 'sales-team', members: ['bob'] },
      { displayName: 'support-team', members: ['carol'] },
    ],
    roles: [
      {
        displayName: 'user-auditor',
        permissions: READ_ONLY_SCOPES,
        users: ['erin', secrets.readOnlyUser.userName],
      },
      {
        displayName: 'helpdesk',
        permissions: ['internal_user_mgt_view', 'internal_user_mgt_update'],
        groups: ['support-team'],
      },
    ],
  };
}
