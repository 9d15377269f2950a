import { TOKEN_EXCHANGE_GRANT } from '@mcp-identity/common';
import type { BootstrapDocument } from '@mcp-identity/idp';
import type { StackLayout } from './layout.js';
import type { StackSecrets } from './secrets.js';
import { LOGIN_REDIRECT_URI } from './user-login.js';

/**
 * `up --delegation` (issue 41): every SCIM call acts for the signed-in user. The gateway
 * exchanges the caller's token at the IdP (RFC 8693) for one whose audience is the SCIM MCP
 * server, and the SCIM MCP server exchanges that again, per tool call, for the SCIM API with the
 * operation's scopes: the directory then sees the user as `sub`, the gateway and the server as
 * nested actors (`act`), and refuses what the user's own role does not allow.
 */

/** The gateway's application at the IdP (the contract's name): it may only exchange tokens. */
export const GATEWAY_EXCHANGE_CLIENT_ID = 'mcp-gateway';

/** The SCIM API the SCIM MCP server's exchanged tokens are for (the workflows' server URL). */
export function scimApiResource(layout: StackLayout): string {
  return `${layout.idp.url}/scim2`;
}

/** The SCIM MCP server's flags for delegated calls: the IdP's tokens for its own URL only. */
export function delegatedMcpArgs(layout: StackLayout): string[] {
  return [
    '--delegated-issuer',
    layout.idp.issuer,
    '--delegated-jwks-url',
    layout.idp.jwksUrl,
    '--delegated-audience',
    layout.mcp.mcpUrl,
  ];
}

/** The proxy's `upstream.tokenExchange` (the gateway's definition keys). */
export function upstreamTokenExchange(layout: StackLayout): Record<string, string> {
  return {
    tokenEndpoint: layout.idp.tokenUrl,
    clientId: GATEWAY_EXCHANGE_CLIENT_ID,
    // The same secrets directory the proxy's upstream.auth reads.
    clientSecretRef: `file:${layout.mcp.exchangeSecretFile}`,
    resource: layout.mcp.mcpUrl,
  };
}

/**
 * The bootstrap with delegation allowed: people may sign in for the client application, the
 * gateway has its exchanging application, the SCIM MCP server's backend may exchange the
 * gateway's tokens for the SCIM API, and a person may sign in with every SCIM permission (role
 * `directory-admin`). `grantTypes` gains the grant; `tokenExchange` lists the subject token
 * audiences each may consume and the resources it may exchange for (the IdP's bootstrap schema).
 */
export function delegationBootstrap(
  bootstrap: BootstrapDocument,
  secrets: StackSecrets,
  gatewaySecret: string,
  layout: StackLayout,
): BootstrapDocument {
  const clientApp = bootstrap.applications?.find(
    (application) => application.clientId === secrets.clientApp.clientId,
  );
  // The gateway's resources (every API resource of the stack's bootstrap): people's tokens for
  // them are the ones the gateway exchanges, so the client application may ask for them.
  const gatewayResources = (bootstrap.apiResources ?? []).map((resource) => ({
    ...resource,
    applications: [...(resource.applications ?? []), ...(clientApp ? [clientApp.name] : [])],
  }));
  const gatewayAudiences = gatewayResources.map((resource) => resource.identifier);
  const applications = (bootstrap.applications ?? []).map((application) => {
    // People sign in for the client application (stack/user-login.ts): user tokens to exchange.
    if (application.clientId === secrets.clientApp.clientId) {
      return {
        ...application,
        grantTypes: [...(application.grantTypes ?? []), 'authorization_code' as const],
        redirectUris: [LOGIN_REDIRECT_URI],
      };
    }
    return application.clientId === secrets.backendApp.clientId
      ? {
          ...application,
          grantTypes: [...(application.grantTypes ?? []), TOKEN_EXCHANGE_GRANT],
          tokenExchange: {
            subjectAudiences: [layout.mcp.mcpUrl],
            resources: [scimApiResource(layout)],
          },
        }
      : application;
  });
  const { userName, password } = secrets.adminUser;
  return {
    ...bootstrap,
    apiResources: gatewayResources,
    users: [
      ...(bootstrap.users ?? []),
      {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName,
        password,
        name: { givenName: 'Directory', familyName: 'Admin' },
        emails: [{ value: `${userName}@example.com`, primary: true, type: 'work' }],
      },
    ],
    roles: [
      ...(bootstrap.roles ?? []),
      { displayName: 'directory-admin', permissions: '*', users: [userName] },
    ],
    applications: [
      ...applications,
      {
        name: 'MCP gateway (token exchange)',
        clientId: GATEWAY_EXCHANGE_CLIENT_ID,
        clientSecret: gatewaySecret,
        grantTypes: [TOKEN_EXCHANGE_GRANT],
        scopes: '*',
        tokenExchange: { subjectAudiences: gatewayAudiences, resources: [layout.mcp.mcpUrl] },
      },
    ],
  };
}
