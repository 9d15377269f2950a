import { callToolThroughGateway, type GatewayCallOutcome } from './stack/clients.js';
import { gatewayRuleScopes } from './stack/gateway-rules.js';
import { PROXY_NAME } from './stack/gateway-setup.js';
import type { StackLayout } from './stack/layout.js';
import { fetchNamingUrl } from './stack/network.js';
import { READ_ONLY_SCOPES } from './stack/sample-data.js';
import type { StackSecrets } from './stack/secrets.js';
import { userAccessToken } from './stack/user-login.js';

/** A demo row: what was called by whom, what should happen and what did. */
export interface DelegationRow {
  caller: string;
  tool: string;
  expected: string;
  actual: string;
}

/** Whether the running stack's proxy exchanges tokens (`up --delegation`), asked of the gateway. */
export async function stackDelegates(layout: StackLayout, secrets: StackSecrets): Promise<boolean> {
  const { username, password } = secrets.gatewayAdmin;
  const response = await fetchNamingUrl(
    `${layout.gateway.managementUrl}/api/management/v1/mcp-proxies/${PROXY_NAME}`,
    {
      headers: {
        authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
        accept: 'application/json',
      },
    },
  );
  if (response.status !== 200) {
    await response.body?.cancel();
    return false;
  }
  // The definition as the management API presents it (JSON): its upstream exchanges or not.
  return (await response.text()).includes('"tokenExchange"');
}

function describe(outcome: GatewayCallOutcome): string {
  if (outcome.kind === 'refused') {
    const scope = /error="insufficient_scope"/.test(outcome.challenge ?? '')
      ? /scope="([^"]*)"/.exec(outcome.challenge ?? '')?.[1]
      : undefined;
    return scope === undefined ? `${outcome.status}` : `${outcome.status}, missing ${scope}`;
  }
  const content = outcome.result.structuredContent as
    | { id?: unknown; errorStatus?: unknown; users?: unknown }
    | undefined;
  if (outcome.result.isError) return 'tool error';
  if (content?.errorStatus != null)
    return `errorStatus ${String(content.errorStatus)} from the IdP`;
  return content?.id ? 'created' : 'allowed';
}

/**
 * The rows `up --delegation` adds: people signed in at the IdP, each SCIM call carrying them as
 * `sub` (the gateway and the SCIM MCP server as actors), so a write is the person's, not the
 * backend's. The administrator's user is deleted again, by the administrator.
 */
export async function runDelegationDemo(
  layout: StackLayout,
  secrets: StackSecrets,
): Promise<DelegationRow[]> {
  const { mcpUrl } = layout.gateway;
  const reader = await userAccessToken(
    layout,
    secrets.clientApp,
    secrets.readOnlyUser,
    READ_ONLY_SCOPES,
    mcpUrl,
  );
  const admin = await userAccessToken(
    layout,
    secrets.clientApp,
    secrets.adminUser,
    gatewayRuleScopes(),
    mcpUrl,
  );
  const readerName = `read-only user ${secrets.readOnlyUser.userName}`;
  const adminName = `administrator ${secrets.adminUser.userName}`;
  const rows: DelegationRow[] = [];
  const search = { filter: 'userName sw a', count: 5 };
  rows.push({
    caller: readerName,
    tool: 'search_users',
    expected: 'allowed',
    actual: describe(await callToolThroughGateway(layout, reader, 'search_users', search)),
  });
  const newUser = {
    userName: `delegated-demo-${Date.now()}`,
    password: 'Demo-Passw0rd!',
    givenName: 'Delegated',
    familyName: 'Demo',
    email: 'delegated-demo@example.com',
  };
  rows.push({
    caller: readerName,
    tool: 'create_user',
    expected: '403, missing internal_user_mgt_create',
    actual: describe(await callToolThroughGateway(layout, reader, 'create_user', newUser)),
  });
  const created = await callToolThroughGateway(layout, admin, 'create_user', newUser);
  rows.push({
    caller: adminName,
    tool: 'create_user',
    expected: 'created',
    actual: describe(created),
  });
  const id =
    created.kind === 'result' ? (created.result.structuredContent as { id?: unknown })?.id : null;
  if (typeof id === 'string') {
    rows.push({
      caller: adminName,
      tool: 'delete_user',
      expected: 'allowed',
      actual: describe(await callToolThroughGateway(layout, admin, 'delete_user', { userId: id })),
    });
  }
  return rows;
}
