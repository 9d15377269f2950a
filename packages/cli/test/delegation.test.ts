import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@mcp-identity/common/testing';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as stringifyYaml } from 'yaml';
import { runDemo } from '../src/demo.js';
import {
  callToolThroughGateway,
  clientCredentialsToken,
  trustingAgent,
} from '../src/stack/clients.js';
import { GATEWAY_EXCHANGE_CLIENT_ID } from '../src/stack/delegation.js';
import { gatewayRuleScopes, type ToolRule } from '../src/stack/gateway-rules.js';
import { scimProxyDefinition } from '../src/stack/gateway-setup.js';
import { READ_ONLY_SCOPES } from '../src/stack/sample-data.js';
import type { RunningStack } from '../src/stack/start.js';
import { userAccessToken } from '../src/stack/user-login.js';
import { startQuietStack } from './support/stack-helpers.js';
import { waitFor } from './support/wait.js';

// Issue 41, end to end through `up --delegation` (the packages' dist/bin.js: run `npx tsc -b`
// first): the gateway's rule is made permissive on purpose, and the directory still refuses the
// read-only user's write, because every SCIM call carries the user, not the backend.
const STACK_MS = 120_000;
const tempDir = useTempDir('cli-delegation-');
let stack: RunningStack;

/** Redeploys the stack's proxy with create_user allowed to anyone who may list users. */
async function deployPermissiveCreateUser(): Promise<void> {
  const { layout, secrets } = stack;
  const definition = scimProxyDefinition(layout, secrets, { delegation: true }) as {
    metadata: { name: string };
    spec: { policies: Array<{ name: string; params: { tools: ToolRule[] } }> };
  };
  const authz = definition.spec.policies.find((policy) => policy.name === 'mcp-authz')!;
  authz.params.tools = authz.params.tools.map((rule) =>
    rule.name === 'create_user' ? { ...rule, scopes: { allOf: ['internal_user_mgt_list'] } } : rule,
  );
  const { username, password } = secrets.gatewayAdmin;
  const response = await fetch(
    `${layout.gateway.managementUrl}/api/management/v1/mcp-proxies/${definition.metadata.name}`,
    {
      method: 'PUT',
      headers: {
        authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
        'content-type': 'application/yaml',
      },
      body: stringifyYaml(definition),
    },
  );
  expect(response.status, await response.text()).toBe(200);
}

/** The directory's users named `userName`, read as the backend application (default mode). */
async function usersNamed(userName: string): Promise<Array<{ id: string }>> {
  const { accessToken } = await clientCredentialsToken(stack.layout, stack.secrets.backendApp, [
    'internal_user_mgt_list',
  ]);
  const url = new URL(`${stack.layout.idp.url}/scim2/Users`);
  url.searchParams.set('filter', `userName eq "${userName}"`);
  const dispatcher = trustingAgent(stack.layout.caFile);
  try {
    const response = await fetch(url, {
      dispatcher,
      headers: { authorization: `Bearer ${accessToken}` },
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { Resources?: Array<{ id: string }> }).Resources ?? [];
  } finally {
    await dispatcher.close();
  }
}

interface ScimWrite {
  method: string;
  route: string;
  status: number;
  subject?: string;
  clientId?: string;
  actor: string[];
}

/** The IdP's records of SCIM writes (its log lines `SCIM write`), in order. */
function scimWrites(): ScimWrite[] {
  return readFileSync(join(stack.layout.logDir, 'idp.log'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes('"scimWrite"'))
    .map((line) => (JSON.parse(line) as { scimWrite: ScimWrite }).scimWrite);
}

const newUser = (userName: string) => ({
  userName,
  password: 'Delegated-Passw0rd!',
  givenName: 'Delegated',
  familyName: 'Write',
  email: `${userName}@example.com`,
});

beforeAll(async () => {
  stack = await startQuietStack(join(tempDir(), 'data'), { delegation: true });
}, STACK_MS);

afterAll(async () => {
  await stack?.stop();
}, STACK_MS);

describe('up --delegation', () => {
  it('runs the demo with signed-in people in place of client-credentials callers', async () => {
    const rows = await runDemo(stack.layout, stack.secrets);
    expect(rows.map((row) => [row.caller, row.tool, row.actual])).toEqual([
      ['read-only user reader', 'search_users', 'allowed'],
      ['read-only user reader', 'create_user', '403, missing internal_user_mgt_create'],
      ['administrator directory-admin', 'create_user', 'created'],
      ['administrator directory-admin', 'delete_user', 'allowed'],
    ]);
    expect(rows.every((row) => row.ok)).toBe(true);
  });

  it("lets the read-only user's create_user through the permissive rule, and the IdP refuses it (SCIM 403 in the result)", async () => {
    await deployPermissiveCreateUser();
    const token = await userAccessToken(
      stack.layout,
      stack.secrets.clientApp,
      stack.secrets.readOnlyUser,
      READ_ONLY_SCOPES,
      stack.layout.gateway.mcpUrl,
    );
    const outcome = await callToolThroughGateway(
      stack.layout,
      token,
      'create_user',
      newUser('delegated-reader-write'),
    );
    expect(outcome.kind).toBe('result');
    if (outcome.kind !== 'result') return;
    // System spec §2.11 rule 5: the API's 4xx is a result, not a tool error.
    expect(outcome.result.isError).toBe(false);
    const refused = outcome.result.structuredContent as { id: unknown; errorStatus: unknown };
    expect(refused.id).toBeNull();
    expect(String(refused.errorStatus)).toBe('403');
    expect(await usersNamed('delegated-reader-write')).toEqual([]);
  });

  it("performs an administrator's create_user, and the IdP's record of it names the user and both actors", async () => {
    const { adminUser, backendApp } = stack.secrets;
    const token = await userAccessToken(
      stack.layout,
      stack.secrets.clientApp,
      adminUser,
      gatewayRuleScopes(),
      stack.layout.gateway.mcpUrl,
    );
    const outcome = await callToolThroughGateway(
      stack.layout,
      token,
      'create_user',
      newUser('delegated-admin-write'),
    );
    expect(outcome.kind).toBe('result');
    if (outcome.kind !== 'result') return;
    expect(outcome.result.isError).toBe(false);
    const created = outcome.result.structuredContent as { id: string | null };
    expect(created.id).toEqual(expect.any(String));
    expect(await usersNamed('delegated-admin-write')).toEqual([
      expect.objectContaining({ id: created.id }),
    ]);

    const [admin] = await usersNamed(adminUser.userName);
    const creations = () =>
      scimWrites().filter((write) => write.method === 'POST' && write.route === '/scim2/Users');
    // The IdP writes its log lines in batches: wait for the administrator's.
    await waitFor(
      () => creations().some((write) => write.subject === admin?.id && write.status === 201),
      "the IdP's record of the administrator's write",
      10_000,
    );
    // RFC 8693 §4.1, outermost actor first: the backend exchanged last, for the gateway.
    const actors = [backendApp.clientId, GATEWAY_EXCHANGE_CLIENT_ID];
    // Found by subject: under load the demo's and the last test's records may be written after it.
    expect(
      creations().find((write) => write.subject === admin?.id && write.status === 201),
    ).toEqual(
      expect.objectContaining({
        status: 201,
        subject: admin?.id,
        clientId: backendApp.clientId,
        actor: actors,
      }),
    );
  });
});
