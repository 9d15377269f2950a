import { randomToken } from '@mcp-identity/common';
import type { BootstrapDocument } from '@mcp-identity/idp';
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

function scimUser(user: SampleUser): Record<string, unknown> {
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

/**
 * What the embedded identity provider holds after bootstrap: the two
 * machine-to-machine applications of spec §5.2 (all scopes, JWT tokens), the
 * custom attributes the profile tool writes, and sample people, groups and roles.
 */
export function stackBootstrap(secrets: StackSecrets): BootstrapDocument {
  return {
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
    users: USERS.map(scimUser),
    groups: [
      { displayName: 'engineering', members: ['alice', 'dave'] },
      { displayName: 'sales-team', members: ['bob'] },
      { displayName: 'support-team', members: ['carol'] },
    ],
    roles: [
      {
        displayName: 'user-auditor',
        permissions: ['internal_user_mgt_view', 'internal_user_mgt_list'],
        users: ['erin'],
      },
      {
        displayName: 'helpdesk',
        permissions: ['internal_user_mgt_view', 'internal_user_mgt_update'],
        groups: ['support-team'],
      },
    ],
  };
}
