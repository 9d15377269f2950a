import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@mcp-identity/common/testing';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../src/commands.js';
import { createProgress } from '../src/progress.js';
import { areaALoginAndCall } from '../src/stack/area-a-flow.js';
import {
  callToolThroughGateway,
  clientCredentialsToken,
  type GatewayCallOutcome,
  resultText,
} from '../src/stack/clients.js';
import type { StackPorts } from '../src/stack/layout.js';
import { type RunningStack, startStack } from '../src/stack/start.js';
import { type RunningService, Supervisor } from '../src/supervisor.js';
import {
  captureStream,
  freeStackPorts,
  gatewayGet,
  managementGet,
  rawGatewayToolCall,
} from './support/stack-helpers.js';

// One whole stack (four processes from the packages' dist/bin.js: run
// `npx tsc -b packages/cli` first) serves every test of this file. The tests
// run in order and the destructive ones (restart, faults) come last.
const STACK_MS = 120_000;
const VIEW_AND_LIST = ['internal_user_mgt_view', 'internal_user_mgt_list'];

interface ScimUser {
  id: string;
  userName: string;
  groups?: { value: string; display: string }[];
  roles?: { value: string; display: string }[];
}

const tempDir = useTempDir();

describe('the whole stack on ephemeral ports', () => {
  let dataDir: string;
  let ports: StackPorts;
  let stack: RunningStack;
  const progress = captureStream();
  // Services the fault tests start again outside the stack's own supervisor.
  const restarted: RunningService[] = [];

  const start = () =>
    startStack({
      dataDir,
      ports,
      progress: createProgress(progress.stream),
      startTimeoutMs: 60_000,
    });

  beforeAll(async () => {
    dataDir = join(tempDir(), 'data');
    ports = await freeStackPorts();
    stack = await start();
  }, STACK_MS);

  afterAll(async () => {
    for (const service of restarted) await service.stop();
    await stack?.stop();
  }, STACK_MS);

  const tokenFor = async (scopes: string[]) =>
    (await clientCredentialsToken(stack.layout, stack.secrets.clientApp, scopes)).accessToken;

  const call = async (scopes: string[], tool: string, args: Record<string, unknown>) =>
    callToolThroughGateway(stack.layout, await tokenFor(scopes), tool, args);

  /** The tool result of an outcome the gateway let through, or a failed expectation. */
  function allowed(outcome: GatewayCallOutcome): CallToolResult {
    if (outcome.kind === 'refused') {
      throw new Error(`refused with ${outcome.status}: ${outcome.challenge} ${outcome.body}`);
    }
    return outcome.result;
  }

  function successful(outcome: GatewayCallOutcome): Record<string, unknown> {
    const result = allowed(outcome);
    expect(resultText(result)).toMatch(/^Workflow Success/);
    expect(result.isError).toBe(false);
    return result.structuredContent as Record<string, unknown>;
  }

  function expectChallenge(
    outcome: GatewayCallOutcome,
    status: 401 | 403,
    parts: { scope?: string; error: 'invalid_token' | 'insufficient_scope' },
  ): void {
    expect(outcome.kind).toBe('refused');
    if (outcome.kind !== 'refused') return;
    expect(outcome.status).toBe(status);
    const challenge = outcome.challenge ?? '';
    expect(challenge).toMatch(/^Bearer /);
    expect(challenge).toContain(`resource_metadata="${stack.layout.gateway.prmUrl}"`);
    expect(challenge).toContain(`error="${parts.error}"`);
    if (parts.scope !== undefined) expect(challenge).toContain(`scope="${parts.scope}"`);
  }

  const findUser = async (userName: string): Promise<ScimUser | undefined> => {
    const outputs = successful(
      await call(['internal_user_mgt_list'], 'search_users', {
        filter: `userName eq ${userName}`,
        count: 1,
      }),
    ) as { users: ScimUser[] | null };
    return outputs.users?.[0];
  };

  const getUser = async (userId: string): Promise<ScimUser> =>
    (
      successful(await call(['internal_user_mgt_view'], 'get_user', { userId })) as {
        user: ScimUser;
      }
    ).user;

  const idOfNamed = async (
    tool: 'list_groups' | 'list_roles',
    scope: string,
    key: 'groups' | 'roles',
    displayName: string,
  ): Promise<string> => {
    const outputs = successful(await call([scope], tool, { startIndex: 1, count: 50 })) as Record<
      string,
      { id: string; displayName: string }[]
    >;
    const found = outputs[key]?.find((entry) => entry.displayName === displayName);
    if (!found) throw new Error(`${displayName} missing from ${tool}`);
    return found.id;
  };

  it(
    'decides the per-tool scope rules at the gateway, and denied calls never reach the MCP server',
    async () => {
      const alice = await findUser('alice');
      const bob = await findUser('bob');
      const dave = await findUser('dave');
      if (!alice || !bob || !dave) throw new Error('sample users missing');
      const engineering = await idOfNamed(
        'list_groups',
        'internal_group_mgt_view',
        'groups',
        'engineering',
      );
      const auditor = await idOfNamed(
        'list_roles',
        'internal_role_mgt_view',
        'roles',
        'user-auditor',
      );

      // view and list scopes only → search_users allowed
      const found = successful(
        await call(VIEW_AND_LIST, 'search_users', { filter: 'userName sw a', count: 5 }),
      ) as { users: ScimUser[] };
      expect(found.users.map((user) => user.userName)).toContain('alice');

      // view and list scopes only → delete_user: 403, missing internal_user_mgt_delete
      expectChallenge(await call(VIEW_AND_LIST, 'delete_user', { userId: alice.id }), 403, {
        scope: 'internal_user_mgt_delete',
        error: 'insufficient_scope',
      });
      expect((await getUser(alice.id)).userName).toBe('alice');

      // internal_group_mgt_update only → add_user_to_group: 403, missing internal_user_mgt_view
      const addBob = { userId: bob.id, groupId: engineering };
      expectChallenge(await call(['internal_group_mgt_update'], 'add_user_to_group', addBob), 403, {
        scope: 'internal_user_mgt_view',
        error: 'insufficient_scope',
      });
      expect((await getUser(bob.id)).groups?.map((group) => group.value)).not.toContain(
        engineering,
      );

      // internal_role_mgt_users_update only → assign_role_to_user allowed, and it took effect
      expect((await getUser(dave.id)).roles?.map((role) => role.value) ?? []).not.toContain(
        auditor,
      );
      const assigned = successful(
        await call(['internal_role_mgt_users_update'], 'assign_role_to_user', {
          roleId: auditor,
          userId: dave.id,
        }),
      );
      expect(assigned.error ?? null).toBeNull();
      expect((await getUser(dave.id)).roles?.map((role) => role.value)).toContain(auditor);
    },
    STACK_MS,
  );

  it(
    "refuses the backend application's token at the gateway (401, audience)",
    async () => {
      const backend = await clientCredentialsToken(
        stack.layout,
        stack.secrets.backendApp,
        VIEW_AND_LIST,
      );
      const outcome = await callToolThroughGateway(
        stack.layout,
        backend.accessToken,
        'search_users',
        { filter: 'userName eq alice', count: 1 },
      );
      expectChallenge(outcome, 401, { error: 'invalid_token' });

      // The challenge's metadata URL serves the gateway's protected resource metadata.
      const prm = await gatewayGet(stack.layout, stack.layout.gateway.prmUrl);
      expect(prm.status).toBe(200);
      expect(prm.body).toMatchObject({
        resource: stack.layout.gateway.mcpUrl,
        authorization_servers: [stack.layout.idp.issuer],
      });
    },
    STACK_MS,
  );

  it(
    'Area A: registration, login, code with PKCE, token, then a tool call on /mcp',
    async () => {
      const anonymous = await fetch(stack.layout.areaA.mcpUrl, { method: 'POST' });
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toContain(
        `resource_metadata="${stack.layout.areaA.url}/.well-known/oauth-protected-resource"`,
      );

      const { accessToken, result } = await areaALoginAndCall(
        stack.layout.areaA.url,
        stack.secrets.areaAccount,
        'search_users',
        { filter: 'userName eq carol', count: 1 },
      );
      expect(accessToken.length).toBeGreaterThan(0);
      expect(resultText(result)).toMatch(/^Workflow Success/);
      const { users } = result.structuredContent as { users: ScimUser[] };
      expect(users.map((user) => user.userName)).toEqual(['carol']);
    },
    STACK_MS,
  );

  it(
    '`mcp-identity demo` prints every row as expected and exits 0',
    async () => {
      const out = captureStream();
      const err = captureStream();
      const code = await runCommand(
        [
          'demo',
          '--data-dir',
          dataDir,
          '--idp-port',
          String(ports.idp),
          '--gateway-https-port',
          String(ports.gatewayHttps),
          '--area-a-port',
          String(ports.areaA),
        ],
        { out: out.stream, err: err.stream },
      );
      const text = out.text();
      expect(code, `stdout:\n${text}\nstderr:\n${err.text()}`).toBe(0);
      const rows = text.split('\n').filter((line) => /^[✓✗] /.test(line));
      expect(rows.length).toBeGreaterThanOrEqual(7);
      expect(rows.filter((line) => line.startsWith('✗'))).toEqual([]);
      expect(text).toContain(`All ${rows.length} rows as expected.`);
      for (const tool of [
        'search_users',
        'delete_user',
        'add_user_to_group',
        'assign_role_to_user',
      ]) {
        expect(rows.some((line) => line.includes(tool))).toBe(true);
      }
    },
    STACK_MS,
  );

  it(
    'a restart on the same data directory keeps client ids, secrets, the proxy and IdP data',
    async () => {
      const secretsFile = join(dataDir, 'stack-secrets.json');
      const secretsBefore = readFileSync(secretsFile, 'utf8');
      const created = successful(
        await call(['internal_user_mgt_create'], 'create_user', {
          userName: 'restart-probe',
          password: 'Restart-Passw0rd!',
          givenName: 'Restart',
          familyName: 'Probe',
          email: 'restart-probe@example.com',
        }),
      ) as { id: string };
      const tokenBefore = await tokenFor(VIEW_AND_LIST);
      const before = stack;

      await before.stop();
      for (const service of Object.values(before.services)) {
        await expect(service.exited).resolves.toBeDefined();
      }
      await expect(fetch(before.layout.gateway.healthUrl)).rejects.toThrow();

      const progressBefore = progress.text().length;
      stack = await start();
      expect(stack.firstStart).toBe(false);
      // The second start found the proxy it had deployed and replaced it in place.
      expect(progress.text().slice(progressBefore)).toContain('proxy updated');
      expect(readFileSync(secretsFile, 'utf8')).toBe(secretsBefore);
      expect(stack.secrets).toEqual(before.secrets);

      const proxy = await managementGet(stack.layout, stack.secrets, '/mcp-proxies/scim-v1.0');
      expect(proxy.status).toBe(200);
      expect(proxy.body).toMatchObject({
        metadata: { name: 'scim-v1.0' },
        spec: { context: '/scim', upstream: { url: stack.layout.mcp.mcpUrl } },
      });

      // The IdP kept its signing keys: a token issued before the restart still passes.
      const probe = await callToolThroughGateway(stack.layout, tokenBefore, 'search_users', {
        filter: 'userName eq restart-probe',
        count: 1,
      });
      const { users } = successful(probe) as { users: ScimUser[] };
      expect(users.map((user) => user.id)).toEqual([created.id]);

      const deleted = successful(
        await call(['internal_user_mgt_delete'], 'delete_user', { userId: created.id }),
      );
      expect(deleted.statusCode).toBe(204);
      expect(await findUser('restart-probe')).toBeUndefined();
    },
    STACK_MS,
  );

  it(
    'the MCP server stopped: the gateway answers 502 with a JSON-RPC error, and recovers when it is back',
    async () => {
      const token = await tokenFor(['internal_user_mgt_list']);
      const search = { filter: 'userName eq erin', count: 1 };
      // Stopped through its supervisor, which then does not restart it.
      await stack.services.mcp.stop();
      expect(stack.services.mcp.status.state).toBe('stopped');

      const down = await rawGatewayToolCall(
        stack.layout,
        token,
        'fault-502',
        'search_users',
        search,
      );
      expect(down.status).toBe(502);
      expect(down.contentType).toMatch(/^application\/json/);
      expect(down.body).toEqual({
        jsonrpc: '2.0',
        id: 'fault-502',
        error: { code: -32000, message: expect.stringMatching(/unreachable/i) },
      });

      restarted.push(await new Supervisor().start(stack.services.mcp.spec));

      const back = await rawGatewayToolCall(
        stack.layout,
        token,
        'fault-back',
        'search_users',
        search,
      );
      expect(back.status).toBe(200);
      expect(back.body).toMatchObject({
        jsonrpc: '2.0',
        id: 'fault-back',
        result: { isError: false },
      });
      const { users } = successful(
        await callToolThroughGateway(stack.layout, token, 'search_users', search),
      ) as { users: ScimUser[] };
      expect(users.map((user) => user.userName)).toEqual(['erin']);
    },
    STACK_MS,
  );

  it(
    'the IdP down: tool calls are tool errors, not applied, while the gateway keeps validating with cached keys',
    async () => {
      // list_agents is called nowhere else in this file, so the MCP server holds no
      // cached IdP token for its scope and must ask the IdP for one.
      const token = await tokenFor(['internal_agent_mgt_list']);
      const deleter = await tokenFor(['internal_user_mgt_delete']);
      const backend = await clientCredentialsToken(
        stack.layout,
        stack.secrets.backendApp,
        VIEW_AND_LIST,
      );
      const page = { startIndex: 1, count: 10 };
      const alice = await findUser('alice');
      if (!alice) throw new Error('sample user alice missing');
      await stack.services.idp.stop();

      // Let through (a tool result, not a 401): the signature was checked with cached keys.
      // Issue 37: a failure, never a success (isError false) the agent could take at its word.
      const down = allowed(await callToolThroughGateway(stack.layout, token, 'list_agents', page));
      const message = resultText(down);
      expect(down.isError).toBe(true);
      expect(down.structuredContent).toBeUndefined();
      expect(message).toMatch(/^Workflow Error: step "fetchAgentPage": token request .* failed: /);
      expect(message).toContain(`POST ${stack.layout.idp.tokenUrl}: connection refused`);
      const notApplied =
        /\nFailure: token\. Applied: no — nothing was changed; retrying is safe\.$/;
      expect(message).toMatch(notApplied);
      const deletion = allowed(
        await callToolThroughGateway(stack.layout, deleter, 'delete_user', { userId: alice.id }),
      );
      expect(deletion.isError).toBe(true);
      expect(resultText(deletion)).toMatch(/^Workflow Error: step "removeUser": token request /);
      expect(resultText(deletion)).toMatch(notApplied);
      // Still validating rather than failing open: the backend's token is refused.
      expectChallenge(
        await callToolThroughGateway(stack.layout, backend.accessToken, 'list_agents', page),
        401,
        { error: 'invalid_token' },
      );

      restarted.push(await new Supervisor().start(stack.services.idp.spec));
      const up = successful(await callToolThroughGateway(stack.layout, token, 'list_agents', page));
      expect(up.error ?? null).toBeNull();
      // "not applied" was true: the user is still there.
      expect((await getUser(alice.id)).userName).toBe('alice');
    },
    STACK_MS,
  );
});
