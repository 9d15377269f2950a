import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runCli } from '@mcp-identity/arazzo-mcp';
import { KNOWN_SCOPES } from '@mcp-identity/idp';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  ARAZZO_FILE,
  BACKEND,
  NO_SCOPES,
  NOT_PERMITTED,
  READ_ONLY,
  type ScimHarness,
  seedUser,
  startScimHarness,
} from './support/harness.js';

type Workflow = {
  workflowId: string;
  summary: string;
  inputs: { properties: Record<string, { type?: string }> };
};

const workflows = (parseYaml(readFileSync(ARAZZO_FILE, 'utf8')) as { workflows: Workflow[] })
  .workflows;

const GATEWAY_RULES = fileURLToPath(new URL('../gateway-rules.yaml', import.meta.url));
type GatewayRule = { name: string; scopes: { allOf?: string[]; anyOf?: string[] } };

/** The 21 tools of the pack (workflows/scim/README.md). */
const TOOLS = [
  'list_users',
  'search_users',
  'get_user',
  'create_user',
  'update_user_attribute',
  'update_user_profile',
  'delete_user',
  'list_groups',
  'create_group',
  'add_user_to_group',
  'remove_user_from_group',
  'delete_group',
  'list_roles',
  'create_role',
  'assign_role_to_user',
  'remove_role_from_user',
  'delete_role',
  'list_agents',
  'create_agent',
  'delete_agent',
  'bulk_create_users',
];

/** The scope(s) each call's token requests ask for, one entry per token (README table). */
const TOKEN_SCOPES: Record<string, string[][]> = {
  list_users: [['internal_user_mgt_list']],
  search_users: [['internal_user_mgt_list']],
  get_user: [['internal_user_mgt_view']],
  create_user: [['internal_user_mgt_create']],
  update_user_attribute: [['internal_user_mgt_update']],
  update_user_profile: [['internal_user_mgt_update']],
  delete_user: [['internal_user_mgt_delete']],
  list_groups: [['internal_group_mgt_view']],
  create_group: [['internal_group_mgt_create']],
  add_user_to_group: [['internal_user_mgt_view'], ['internal_group_mgt_update']],
  remove_user_from_group: [['internal_group_mgt_update']],
  delete_group: [['internal_group_mgt_delete']],
  list_roles: [['internal_role_mgt_view']],
  create_role: [['internal_role_mgt_create']],
  assign_role_to_user: [['internal_role_mgt_users_update']],
  remove_role_from_user: [['internal_role_mgt_users_update']],
  delete_role: [['internal_role_mgt_delete']],
  list_agents: [['internal_agent_mgt_list']],
  create_agent: [['internal_agent_mgt_create']],
  delete_agent: [['internal_agent_mgt_delete']],
  bulk_create_users: [['internal_bulk_user_create']],
};

const toolName = (workflowId: string) =>
  workflowId.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

let h: ScimHarness;
let userId: string;

beforeAll(async () => {
  h = await startScimHarness();
  userId = await seedUser(h, 'token-user');
});

describe('the pack as data', () => {
  it('passes arazzo-mcp validate', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['validate', '--arazzo', ARAZZO_FILE], {
      out: (text) => out.push(text),
      err: (text) => err.push(text),
      env: {},
    });
    expect(err).toEqual([]);
    expect(code).toBe(0);
    expect(out.join('')).toContain(': 21 tools (');
  });

  it('has one gateway rule per tool, covering the scopes its calls request', () => {
    const rules = (parseYaml(readFileSync(GATEWAY_RULES, 'utf8')) as { tools: GatewayRule[] })
      .tools;
    expect(rules.map((r) => r.name).sort()).toEqual([...TOOLS].sort());
    for (const rule of rules) {
      const requested = (TOKEN_SCOPES[rule.name] ?? []).flat();
      if (rule.scopes.allOf) expect([...rule.scopes.allOf].sort()).toEqual([...requested].sort());
      else expect(rule.scopes.anyOf).toEqual(expect.arrayContaining(requested));
    }
    // The reference WSO2 deployment's four rules, exactly.
    const byName = new Map(rules.map((r) => [r.name, r.scopes]));
    expect(byName.get('search_users')).toEqual({ allOf: ['internal_user_mgt_list'] });
    expect(byName.get('delete_user')).toEqual({ allOf: ['internal_user_mgt_delete'] });
    expect(byName.get('add_user_to_group')).toEqual({
      allOf: ['internal_user_mgt_view', 'internal_group_mgt_update'],
    });
    expect(byName.get('assign_role_to_user')).toEqual({
      anyOf: ['internal_role_mgt_update', 'internal_role_mgt_users_update'],
    });
  });
});

describe('tools/list', () => {
  it('shows exactly the 21 tools of the pack', async () => {
    const { tools } = await h.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...TOOLS].sort());
    expect(workflows.map((w) => toolName(w.workflowId)).sort()).toEqual([...TOOLS].sort());
  });

  it('describes each tool by its summary and requires every typed input, without descriptions', async () => {
    const { tools } = await h.client.listTools();
    const types = { integer: 'integer', number: 'number', string: 'string', boolean: 'boolean' };
    for (const workflow of workflows) {
      const tool = tools.find((t) => t.name === toolName(workflow.workflowId));
      expect(tool?.description).toBe(workflow.summary);
      const names = Object.keys(workflow.inputs.properties);
      const expected = Object.fromEntries(
        names.map((name) => {
          const type = workflow.inputs.properties[name]?.type ?? '';
          return [name, { type: types[type as keyof typeof types] ?? 'string' }];
        }),
      );
      expect({ tool: tool?.name, schema: tool?.inputSchema }).toEqual({
        tool: tool?.name,
        schema: { type: 'object', properties: expected, required: [...names].sort() },
      });
    }
  });

  it('has the documented inputs of search_users, get_user, add_user_to_group and update_user_profile', async () => {
    const { tools } = await h.client.listTools();
    const properties = (name: string) => tools.find((t) => t.name === name)?.inputSchema.properties;
    expect(properties('search_users')).toEqual({
      filter: { type: 'string' },
      count: { type: 'integer' },
    });
    expect(properties('get_user')).toEqual({ userId: { type: 'string' } });
    expect(properties('add_user_to_group')).toEqual({
      userId: { type: 'string' },
      groupId: { type: 'string' },
    });
    expect(Object.keys(properties('update_user_profile') ?? {}).sort()).toEqual(
      [
        'userId',
        'region',
        'department',
        'employeeNumber',
        'costCenter',
        'customerTier',
        'contractEndDate',
      ].sort(),
    );
    expect(
      Object.keys(tools.find((t) => t.name === 'create_agent')?.outputSchema?.properties ?? {}),
    ).toEqual(['id', 'userName', 'error', 'errorStatus']);
  });
});

describe('typed outputs (issue 19)', () => {
  const NULLABLE_STRING = ['string', 'null'];
  const STATUS = ['string', 'integer', 'null'];
  /** Each tool's outputs and their JSON types, from the OpenAPI responses they read. */
  const OUTPUT_TYPES: Record<string, Record<string, string[]>> = Object.fromEntries(
    TOOLS.map((name) => {
      const outputs: Record<string, string[]> = {};
      if (name.startsWith('list_')) {
        outputs.totalResults = ['integer', 'null'];
        outputs[name.slice('list_'.length)] = ['array', 'null'];
      } else if (name.startsWith('delete_')) outputs.statusCode = ['integer', 'null'];
      else if (name.startsWith('create_') || name.startsWith('update_user_')) {
        outputs.id = NULLABLE_STRING;
        outputs[name === 'create_group' || name === 'create_role' ? 'displayName' : 'userName'] =
          NULLABLE_STRING;
      }
      if (name === 'search_users') outputs.users = ['array', 'null'];
      if (name === 'get_user') outputs.user = ['object', 'null'];
      if (name === 'add_user_to_group') outputs.userName = NULLABLE_STRING;
      if (name.endsWith('_user_to_group') || name === 'remove_user_from_group') {
        outputs.groupName = NULLABLE_STRING;
      }
      if (name.endsWith('role_to_user') || name === 'remove_role_from_user') {
        outputs.roleName = NULLABLE_STRING;
      }
      if (name === 'bulk_create_users') outputs.results = ['array', 'null'];
      return [name, { ...outputs, error: NULLABLE_STRING, errorStatus: STATUS }];
    }),
  );

  it('gives every output of the 21 tools the JSON types of the response member it reads', async () => {
    const { tools } = await h.client.listTools();
    expect(tools).toHaveLength(21);
    for (const tool of tools) {
      const properties = tool.outputSchema?.properties as Record<string, { type?: unknown }>;
      const types = Object.fromEntries(
        Object.entries(properties).map(([name, schema]) => [name, schema.type]),
      );
      expect({ tool: tool.name, types }).toEqual({
        tool: tool.name,
        types: OUTPUT_TYPES[tool.name],
      });
    }
  });

  it('describes the members of listed and returned resources', async () => {
    const { tools } = await h.client.listTools();
    const output = (tool: string, name: string) =>
      tools.find((t) => t.name === tool)?.outputSchema?.properties?.[name];
    const user = {
      type: 'object',
      properties: expect.objectContaining({
        id: expect.objectContaining({ type: 'string' }),
        userName: { type: 'string' },
        active: { type: 'boolean' },
        emails: expect.objectContaining({ type: 'array' }),
      }),
    };
    expect(output('search_users', 'users')).toMatchObject({ items: user });
    expect(output('get_user', 'user')).toMatchObject({
      anyOf: [{ anyOf: [user, { properties: { detail: { type: 'string' } } }] }, { type: 'null' }],
    });
    expect(output('list_groups', 'groups')).toMatchObject({
      items: { properties: { displayName: expect.objectContaining({ type: 'string' }) } },
    });
    expect(output('bulk_create_users', 'results')).toMatchObject({
      items: { properties: { bulkId: { type: 'string' }, location: { type: 'string' } } },
    });
  });

  it("validates real results against each tool's outputSchema (the SDK client checks them)", async () => {
    // The SDK client compiles every outputSchema from tools/list and refuses a call whose
    // structuredContent does not validate: each call below would reject.
    const { tools } = await h.client.listTools();
    expect(tools.every((tool) => tool.outputSchema !== undefined)).toBe(true);
    const found = await h.call('search_users', { filter: 'userName eq token-user', count: 1 });
    expect(found.outputs.users).toEqual([expect.objectContaining({ id: userId })]);
    const user = await h.call('get_user', { userId });
    expect(user.outputs.user).toMatchObject({ id: userId, userName: 'token-user' });
    const missing = await h.call('get_user', { userId: '00000000-0000-4000-8000-000000000000' });
    expect(missing.outputs).toMatchObject({ errorStatus: '404', user: { status: '404' } });
    const unauthorized = await h.connectAs(NO_SCOPES);
    await unauthorized.client.listTools(); // the client validates only tools it has listed
    const refused = await unauthorized.call('list_users', { startIndex: 1, count: 1 });
    expect(refused.outputs).toMatchObject({ users: null, errorStatus: 403 });
    const page = await h.call('list_groups', { startIndex: 1, count: 5 });
    expect(page.outputs.totalResults).toEqual(expect.any(Number));
  });
});

describe('tokens', () => {
  const UNKNOWN = '00000000-0000-4000-8000-000000000000';
  const argumentsFor = (name: string): Record<string, unknown> => {
    const byName: Record<string, Record<string, unknown>> = {
      list_users: { startIndex: 1, count: 1 },
      search_users: { filter: 'userName eq token-user', count: 1 },
      get_user: { userId },
      create_user: {
        userName: 'token-created',
        password: 'Passw0rd!x',
        givenName: 'T',
        familyName: 'C',
        email: 'token-created@example.com',
      },
      update_user_attribute: { userId, attribute: 'title', value: 'Tester' },
      update_user_profile: {
        userId,
        region: 'EU',
        department: 'QA',
        employeeNumber: '1',
        costCenter: 'C1',
        customerTier: 'silver',
        contractEndDate: '2027-01-01',
      },
      delete_user: { userId: UNKNOWN },
      list_groups: { startIndex: 1, count: 1 },
      create_group: { displayName: 'token-group' },
      add_user_to_group: { userId, groupId: UNKNOWN },
      remove_user_from_group: { userId, groupId: UNKNOWN },
      delete_group: { groupId: UNKNOWN },
      list_roles: { startIndex: 1, count: 1 },
      create_role: { displayName: 'token-role', permissions: '[]' },
      assign_role_to_user: { roleId: UNKNOWN, userId },
      remove_role_from_user: { roleId: UNKNOWN, userId },
      delete_role: { roleId: UNKNOWN },
      list_agents: { startIndex: 1, count: 1 },
      create_agent: {
        displayName: 'Token Agent',
        description: 'd',
        owner: `${userId}@carbon.super`,
      },
      delete_agent: { agentId: UNKNOWN },
      bulk_create_users: {
        operations: JSON.stringify([
          {
            method: 'POST',
            path: '/Users',
            bulkId: 't1',
            data: { userName: 'token-bulk', password: 'Passw0rd!x' },
          },
        ]),
      },
    };
    const args = byName[name];
    if (!args) throw new Error(`no arguments for ${name}`);
    return args;
  };

  it("every tool call requests new tokens holding only its operations' scopes", async () => {
    const digests = new Set<string>();
    for (const name of TOOLS) {
      h.proxy.reset();
      const result = await h.call(name, argumentsFor(name));
      expect({ name, isError: result.isError, text: result.text.slice(0, 27) }).toEqual({
        name,
        isError: false,
        text: 'Workflow Success. Outputs: ',
      });
      const tokens = h.proxy.tokenRequests();
      expect({ name, scopes: tokens.map((t) => t.scopes) }).toEqual({
        name,
        scopes: TOKEN_SCOPES[name],
      });
      for (const token of tokens) {
        expect(token).toMatchObject({ grantType: 'client_credentials', status: 200 });
        expect(token.clientAuth?.clientId).toBe(BACKEND.clientId);
        expect(KNOWN_SCOPES).toEqual(expect.arrayContaining(token.scopes));
      }
      // Each API request carried a token with exactly its operation's scope, never reused.
      const calls = h.proxy.apiRequests();
      expect({ name, scopes: calls.map((c) => c.bearer?.scopes) }).toEqual({
        name,
        scopes: TOKEN_SCOPES[name],
      });
      for (const call of calls) {
        const digest = call.bearer?.digest ?? '';
        expect(digests.has(digest)).toBe(false);
        digests.add(digest);
      }
    }
  });

  it('N calls of one tool make N token requests', async () => {
    h.proxy.reset();
    for (let i = 0; i < 3; i++)
      await h.call('search_users', { filter: 'userName sw token', count: 5 });
    const tokens = h.proxy.tokenRequests();
    expect(tokens).toHaveLength(3);
    expect(tokens.every((t) => t.scopes.join(' ') === 'internal_user_mgt_list')).toBe(true);
    const digests = new Set(h.proxy.apiRequests().map((r) => r.bearer?.digest));
    expect(digests.size).toBe(3);
  });
});

describe('a backend application holding only read scopes', () => {
  it('is refused by the IdP when it creates a user: errorStatus 403, isError false', async () => {
    const readOnly = await h.connectAs(READ_ONLY);
    h.proxy.reset();
    const result = await readOnly.call('create_user', {
      userName: 'never-created',
      password: 'Passw0rd!x',
      givenName: 'N',
      familyName: 'C',
      email: 'never-created@example.com',
    });
    expect(result).toEqual({
      text: `Workflow Success. Outputs: {'id': None, 'userName': None, 'error': '${NOT_PERMITTED}', 'errorStatus': 403}`,
      isError: false,
      outputs: { id: null, userName: null, error: NOT_PERMITTED, errorStatus: 403 },
    });
    expect(h.proxy.tokenRequests().map((t) => [t.clientAuth?.clientId, t.scopes])).toEqual([
      [READ_ONLY.clientId, ['internal_user_mgt_create']],
    ]);
    const found = await h.scim('POST', '/Users/.search', {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
      filter: 'userName eq never-created',
    });
    expect(found.body.totalResults).toBe(0);

    // Its read scopes still work: the view and list scopes allow search_users.
    const search = await readOnly.call('search_users', {
      filter: 'userName eq token-user',
      count: 1,
    });
    expect((search.outputs.users as { id: string }[]).map((u) => u.id)).toEqual([userId]);
  });
});

describe('a backend application without the scopes', () => {
  it("gets the IdP's 403 inside every list tool's result", async () => {
    const unauthorized = await h.connectAs(NO_SCOPES);
    for (const [name, items] of [
      ['list_users', 'users'],
      ['list_groups', 'groups'],
      ['list_roles', 'roles'],
      ['list_agents', 'agents'],
    ] as const) {
      const result = await unauthorized.call(name, { startIndex: 1, count: 10 });
      expect({ name, ...result }).toEqual({
        name,
        text: `Workflow Success. Outputs: {'totalResults': None, '${items}': None, 'error': '${NOT_PERMITTED}', 'errorStatus': 403}`,
        isError: false,
        outputs: { totalResults: null, [items]: null, error: NOT_PERMITTED, errorStatus: 403 },
      });
    }
  });
});

describe('results', () => {
  it('are the Python repr of the outputs, with structuredContent alongside', async () => {
    const result = await h.call('get_user', { userId });
    const stored = await h.scim('GET', `/Users/${userId}`);
    expect(result.outputs).toEqual({ user: stored.body, error: null, errorStatus: null });
    const user = result.outputs.user as { emails: { value: string }[]; userName: string };
    expect(result.text.startsWith("Workflow Success. Outputs: {'user': {")).toBe(true);
    expect(result.text).toContain(`'userName': 'token-user'`);
    expect(result.text).toContain(
      `'emails': [{'value': '${user.emails[0]?.value}', 'primary': True`,
    );
    expect(result.text.endsWith(", 'error': None, 'errorStatus': None}")).toBe(true);
    // No JSON quoting; the only double quotes are those of the weak ETag `W/"n"` (RFC 7232).
    expect(result.text.replace(/W\/"\d+"/g, '')).not.toContain('"');
    expect(result.text).not.toContain('null');
  });
});
