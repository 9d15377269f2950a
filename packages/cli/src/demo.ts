import { readFile } from 'node:fs/promises';
import { createRunner, loadArazzo } from '@mcp-identity/arazzo';
import { NotFoundError } from '@mcp-identity/common';
import { runDelegationDemo, stackDelegates } from './demo-delegation.js';
import { areaALoginAndCall } from './stack/area-a-flow.js';
import {
  callToolThroughGateway,
  clientCredentialsToken,
  type GatewayCallOutcome,
  resultText,
} from './stack/clients.js';
import type { StackLayout } from './stack/layout.js';
import { SCIM_ARAZZO_FILE } from './stack/locations.js';
import type { StackSecrets } from './stack/secrets.js';

export interface DemoRow {
  caller: string;
  tool: string;
  expected: string;
  actual: string;
  ok: boolean;
}

const VIEW_AND_LIST = ['internal_user_mgt_view', 'internal_user_mgt_list'];

/**
 * A 403 `insufficient_scope` challenge names the scopes the call lacked; the
 * `scope` of a 401 challenge only advertises what the resource offers
 * (RFC 6750 §3), so a 401 is described by its status alone.
 */
function describeOutcome(outcome: GatewayCallOutcome): string {
  if (outcome.kind === 'result') return 'allowed';
  const challenge = outcome.challenge ?? '';
  const scope = /error="insufficient_scope"/.test(challenge)
    ? /scope="([^"]*)"/.exec(challenge)?.[1]
    : undefined;
  return scope === undefined ? `${outcome.status}` : `${outcome.status}, missing ${scope}`;
}

/**
 * The gateway's per-tool scope decisions (the rules of
 * workflows/scim/gateway-rules.yaml: allOf needs every scope, anyOf one of them)
 * and their neighbours, run against a live stack: each row states the expected
 * outcome and what happened. Ids come from the sample data, looked up through
 * the gateway.
 */
export async function runDemo(layout: StackLayout, secrets: StackSecrets): Promise<DemoRow[]> {
  // Delegated (`up --delegation`): callers are people, whose tokens the gateway exchanges; the
  // client-credentials callers below would be refused by the exchange.
  if (await stackDelegates(layout, secrets)) {
    const rows = await runDelegationDemo(layout, secrets);
    return rows.map((row) => ({ ...row, ok: row.actual === row.expected }));
  }
  const gatewayCall = async (scopes: string[], tool: string, args: Record<string, unknown>) => {
    const { accessToken } = await clientCredentialsToken(layout, secrets.clientApp, scopes);
    return callToolThroughGateway(layout, accessToken, tool, args);
  };
  const structured = (outcome: GatewayCallOutcome) =>
    (outcome.kind === 'result' ? outcome.result.structuredContent : undefined) as
      | Record<string, { id: string; displayName?: string }[] | null>
      | undefined;

  const alice = structured(
    await gatewayCall(VIEW_AND_LIST, 'search_users', { filter: 'userName eq alice', count: 1 }),
  );
  const groups = structured(
    await gatewayCall(['internal_group_mgt_view'], 'list_groups', { startIndex: 1, count: 50 }),
  );
  const roles = structured(
    await gatewayCall(['internal_role_mgt_view'], 'list_roles', { startIndex: 1, count: 50 }),
  );
  const aliceId = alice?.users?.[0]?.id;
  const groupId = groups?.groups?.find((g) => g.displayName === 'engineering')?.id;
  const roleId = roles?.roles?.find((r) => r.displayName === 'helpdesk')?.id;
  if (!aliceId || !groupId || !roleId) {
    throw new NotFoundError(
      'the sample user alice, group engineering or role helpdesk is missing: was the stack bootstrapped?',
    );
  }

  const rows: DemoRow[] = [];
  const row = (caller: string, tool: string, expected: string, actual: string) =>
    rows.push({ caller, tool, expected, actual, ok: actual === expected });

  row(
    'view + list scopes',
    'search_users',
    'allowed',
    describeOutcome(
      await gatewayCall(VIEW_AND_LIST, 'search_users', { filter: 'userName sw a', count: 5 }),
    ),
  );
  row(
    'view + list scopes',
    'delete_user',
    '403, missing internal_user_mgt_delete',
    describeOutcome(await gatewayCall(VIEW_AND_LIST, 'delete_user', { userId: aliceId })),
  );
  row(
    'internal_group_mgt_update only',
    'add_user_to_group',
    '403, missing internal_user_mgt_view',
    describeOutcome(
      await gatewayCall(['internal_group_mgt_update'], 'add_user_to_group', {
        userId: aliceId,
        groupId,
      }),
    ),
  );
  row(
    'internal_role_mgt_users_update only',
    'assign_role_to_user',
    'allowed',
    describeOutcome(
      await gatewayCall(['internal_role_mgt_users_update'], 'assign_role_to_user', {
        roleId,
        userId: aliceId,
      }),
    ),
  );

  const backendToken = await clientCredentialsToken(layout, secrets.backendApp, VIEW_AND_LIST);
  row(
    'backend application token',
    'search_users',
    '401',
    describeOutcome(
      await callToolThroughGateway(layout, backendToken.accessToken, 'search_users', {
        filter: 'userName sw a',
        count: 1,
      }),
    ),
  );

  row(
    'read-only backend at the IdP',
    'create_user',
    'errorStatus 403: Operation is not permitted…',
    await readOnlyCreateUser(layout, secrets),
  );

  const areaA = await areaALoginAndCall(layout.areaA.url, secrets.areaAccount, 'search_users', {
    filter: 'userName eq alice',
    count: 1,
  });
  const areaAText = resultText(areaA.result);
  row(
    'Area A login → token (mcp:tools)',
    'search_users',
    'Workflow Success, alice found',
    areaAText.startsWith('Workflow Success') && areaAText.includes("'userName': 'alice'")
      ? 'Workflow Success, alice found'
      : areaAText.slice(0, 120),
  );
  return rows;
}

/**
 * The identity provider, not the gateway, refuses a write made with a read-only
 * backend token (a 403 SCIM error the tool returns as its `errorStatus`). The
 * tool runs here with the read-only backend's credentials, as the MCP server
 * would, against the local IdP.
 */
async function readOnlyCreateUser(layout: StackLayout, secrets: StackSecrets): Promise<string> {
  const loaded = await loadArazzo(SCIM_ARAZZO_FILE, {
    sourceServers: { scim2: `${layout.idp.url}/scim2`, agents: `${layout.idp.url}/scim2` },
  });
  const runner = createRunner(loaded, {
    env: {
      SCIM_OAUTH2_CLIENT_ID: secrets.readOnlyApp.clientId,
      SCIM_OAUTH2_CLIENT_SECRET: secrets.readOnlyApp.clientSecret,
    },
    // The stack's own CA issued the IdP's certificate: verified against it, as every other
    // client of the stack does.
    ca: await readFile(layout.caFile, 'utf8'),
  });
  try {
    const result = await runner.run('createUser', {
      userName: 'demo-should-not-exist',
      password: 'Demo-Passw0rd!',
      givenName: 'Demo',
      familyName: 'User',
      email: 'demo@example.com',
    });
    if (result.kind === 'error') return `Workflow Error: ${result.message}`;
    const { error, errorStatus } = result.outputs as { error?: unknown; errorStatus?: unknown };
    return String(errorStatus) === '403' && String(error).startsWith('Operation is not permitted')
      ? 'errorStatus 403: Operation is not permitted…'
      : `errorStatus ${String(errorStatus)}: ${String(error)}`;
  } finally {
    await runner.close();
  }
}

export function renderDemo(rows: DemoRow[]): string {
  const headers = ['', 'caller', 'tool', 'expected', 'actual'];
  const cells = rows.map((r) => [r.ok ? '✓' : '✗', r.caller, r.tool, r.expected, r.actual]);
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  const failed = rows.filter((r) => !r.ok).length;
  return [
    line(headers),
    line(widths.map((w) => '─'.repeat(w))),
    ...cells.map(line),
    '',
    failed === 0
      ? `All ${rows.length} rows as expected.`
      : `${failed} of ${rows.length} rows differ from what is expected.`,
  ].join('\n');
}
