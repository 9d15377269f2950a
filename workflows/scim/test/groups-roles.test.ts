import { beforeAll, describe, expect, it } from 'vitest';
import { type ScimHarness, seedUser, startScimHarness } from './support/harness.js';

let h: ScimHarness;
let userId: string;

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

beforeAll(async () => {
  // Token requests are the subject of shape-and-tokens.test.ts; here they would only cost time.
  h = await startScimHarness({ tokenCache: true });
  userId = await seedUser(h, 'member1');
});

async function seedGroup(displayName: string, members: { value: string; display: string }[] = []) {
  const created = await h.scim('POST', '/Groups', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
    displayName,
    ...(members.length ? { members } : {}),
  });
  if (created.status !== 201) throw new Error(`seed group ${displayName}: ${created.status}`);
  return created.body.id as string;
}

async function seedRole(displayName: string) {
  const created = await h.scim('POST', '/v2/Roles', {
    schemas: ['urn:ietf:params:scim:schemas:extension:2.0:Role'],
    displayName,
    permissions: [],
  });
  if (created.status !== 201) throw new Error(`seed role ${displayName}: ${created.status}`);
  return created.body.id as string;
}

const memberIds = async (groupId: string) =>
  (((await h.scim('GET', `/Groups/${groupId}`)).body.members ?? []) as { value: string }[]).map(
    (m) => m.value,
  );

const roleUserIds = async (roleId: string) =>
  (((await h.scim('GET', `/v2/Roles/${roleId}`)).body.users ?? []) as { value: string }[]).map(
    (u) => u.value,
  );

describe('list_groups', () => {
  it('returns a page of the groups the IdP holds', async () => {
    await seedGroup('listed-a');
    await seedGroup('listed-b');
    const result = await h.call('list_groups', { startIndex: 1, count: 100 });
    const listed = await h.scim('GET', '/Groups?startIndex=1&count=100');
    expect(result.outputs.totalResults).toBe(listed.body.totalResults);
    const names = (result.outputs.groups as { displayName: string }[]).map((g) => g.displayName);
    expect(names).toEqual(expect.arrayContaining(['listed-a', 'listed-b']));
    expect(result.outputs.error).toBeNull();
  });

  it('rejects a mistyped input before running the workflow', async () => {
    h.proxy.reset();
    const result = await h.call('list_groups', { startIndex: '1', count: 10 });
    expect(result.isError).toBe(true);
    expect(result.text).toContain('Invalid arguments for tool list_groups');
    expect(h.proxy.requests).toEqual([]);
  });
});

describe('create_group', () => {
  it('creates an empty group', async () => {
    const result = await h.call('create_group', { displayName: 'engineering' });
    const id = result.outputs.id as string;
    expect(result.text).toBe(
      `Workflow Success. Outputs: {'id': '${id}', 'displayName': 'engineering', 'error': None, 'errorStatus': None}`,
    );
    const stored = await h.scim('GET', `/Groups/${id}`);
    expect(stored.body.displayName).toBe('engineering');
    expect(stored.body.members ?? []).toEqual([]);
  });

  it('names the pattern when the group name is invalid', async () => {
    for (const displayName of ['has space', 'ab']) {
      const result = await h.call('create_group', { displayName });
      expect(result.isError).toBe(false);
      expect(result.outputs).toMatchObject({ id: null, displayName: null, errorStatus: '400' });
      expect(result.outputs.error).toEqual(expect.stringContaining('^[\\S]{3,30}$'));
      expect(result.text).toContain('^[\\\\S]{3,30}$');
    }
    const listed = await h.scim('GET', '/Groups?startIndex=1&count=100');
    const names = ((listed.body.Resources ?? []) as { displayName: string }[]).map(
      (g) => g.displayName,
    );
    expect(names).not.toContain('has space');
    expect(names).not.toContain('ab');
  });
});

describe('add_user_to_group', () => {
  it('looks the user up, then adds it with its userName as display', async () => {
    const groupId = await seedGroup('add-target');
    h.proxy.reset();
    const result = await h.call('add_user_to_group', { userId, groupId });
    expect(result.text).toBe(
      "Workflow Success. Outputs: {'userName': 'member1', 'groupName': 'add-target', 'error': None, 'errorStatus': None}",
    );
    const [lookup, patch] = h.proxy.apiRequests();
    expect(lookup).toMatchObject({ method: 'GET', path: `/scim2/Users/${userId}` });
    expect(patch).toMatchObject({ method: 'PATCH', path: `/scim2/Groups/${groupId}` });
    expect(JSON.parse(patch?.body ?? '{}')).toEqual({
      schemas: [PATCH_OP],
      Operations: [{ op: 'add', path: 'members', value: [{ value: userId, display: 'member1' }] }],
    });
    const stored = await h.scim('GET', `/Groups/${groupId}`);
    expect(stored.body.members).toEqual([
      expect.objectContaining({ value: userId, display: 'member1' }),
    ]);
  });

  it('reports an unknown group as error 404', async () => {
    const result = await h.call('add_user_to_group', { userId, groupId: UNKNOWN_ID });
    expect(result.isError).toBe(false);
    expect(result.outputs).toMatchObject({
      userName: 'member1',
      groupName: null,
      errorStatus: '404',
    });
    expect(result.outputs.error).toEqual(expect.any(String));
  });

  it('stops after the lookup when the user is unknown and reports its 404', async () => {
    const groupId = await seedGroup('add-unknown');
    h.proxy.reset();
    const result = await h.call('add_user_to_group', { userId: UNKNOWN_ID, groupId });
    expect(result.isError).toBe(false);
    expect(result.text).toBe(
      "Workflow Success. Outputs: {'userName': None, 'groupName': None, 'error': 'User not found in the user store.', 'errorStatus': '404'}",
    );
    expect(h.proxy.apiRequests().map((r) => `${r.method} ${r.status}`)).toEqual(['GET 404']);
    expect(await memberIds(groupId)).toEqual([]);
  });
});

describe('remove_user_from_group', () => {
  it('removes the member and keeps the others', async () => {
    const otherId = await seedUser(h, 'member2');
    const groupId = await seedGroup('remove-target', [
      { value: userId, display: 'member1' },
      { value: otherId, display: 'member2' },
    ]);
    const result = await h.call('remove_user_from_group', { userId, groupId });
    expect(result.text).toBe(
      "Workflow Success. Outputs: {'groupName': 'remove-target', 'error': None, 'errorStatus': None}",
    );
    expect(await memberIds(groupId)).toEqual([otherId]);
  });

  it('reports an unknown group as error 404', async () => {
    const result = await h.call('remove_user_from_group', { userId, groupId: UNKNOWN_ID });
    expect(result.outputs).toMatchObject({ groupName: null, errorStatus: '404' });
    expect(result.outputs.error).toEqual(expect.any(String));
  });
});

describe('delete_group', () => {
  it('deletes the group but not its members', async () => {
    const groupId = await seedGroup('doomed', [{ value: userId, display: 'member1' }]);
    const result = await h.call('delete_group', { groupId });
    expect(result.text).toBe(
      "Workflow Success. Outputs: {'statusCode': 204, 'error': None, 'errorStatus': None}",
    );
    expect((await h.scim('GET', `/Groups/${groupId}`)).status).toBe(404);
    expect((await h.scim('GET', `/Users/${userId}`)).status).toBe(200);
  });

  it('reports an unknown group as error 404', async () => {
    const result = await h.call('delete_group', { groupId: UNKNOWN_ID });
    expect(result.outputs).toMatchObject({ statusCode: 404, errorStatus: '404' });
    expect(result.outputs.error).toEqual(expect.any(String));
  });
});

describe('list_roles', () => {
  it('returns a page of the roles the IdP holds', async () => {
    await seedRole('listed-role');
    const result = await h.call('list_roles', { startIndex: 1, count: 100 });
    const listed = await h.scim('GET', '/v2/Roles?startIndex=1&count=100');
    expect(result.outputs.totalResults).toBe(listed.body.totalResults);
    const names = (result.outputs.roles as { displayName: string }[]).map((r) => r.displayName);
    expect(names).toContain('listed-role');
    expect(result.outputs.error).toBeNull();
  });

  it('gives an empty roles list past the last page (RFC 7644 §3.4.2.4)', async () => {
    const result = await h.call('list_roles', { startIndex: 10_000, count: 10 });
    expect(result.outputs).toMatchObject({ roles: [], error: null, errorStatus: null });
  });
});

describe('create_role', () => {
  it('creates an organization role with the given permissions', async () => {
    const result = await h.call('create_role', {
      displayName: 'support-agent',
      permissions: JSON.stringify([{ value: 'internal_user_mgt_view' }]),
    });
    const id = result.outputs.id as string;
    expect(result.text).toBe(
      `Workflow Success. Outputs: {'id': '${id}', 'displayName': 'support-agent', 'error': None, 'errorStatus': None}`,
    );
    const stored = await h.scim('GET', `/v2/Roles/${id}`);
    expect(stored.body.displayName).toBe('support-agent');
    expect((stored.body.permissions as { value: string }[]).map((p) => p.value)).toEqual([
      'internal_user_mgt_view',
    ]);
  });

  it('reports a duplicate role name as an error', async () => {
    await seedRole('taken-role');
    const result = await h.call('create_role', { displayName: 'taken-role', permissions: '[]' });
    expect(result.isError).toBe(false);
    expect(result.outputs).toMatchObject({ id: null, displayName: null, errorStatus: '409' });
    expect(result.outputs.error).toEqual(expect.any(String));
  });

  it('refuses permissions that are not JSON, naming the argument', async () => {
    h.proxy.reset();
    const result = await h.call('create_role', { displayName: 'x-role', permissions: 'not json' });
    expect(result.isError).toBe(true);
    expect(result.text).toContain('permissions');
    expect(h.proxy.requests).toEqual([]);
  });
});

describe('assign_role_to_user and remove_role_from_user', () => {
  it('assigns the role, then takes it away', async () => {
    const roleId = await seedRole('assignable');
    const assigned = await h.call('assign_role_to_user', { roleId, userId });
    expect(assigned.text).toBe(
      "Workflow Success. Outputs: {'roleName': 'assignable', 'error': None, 'errorStatus': None}",
    );
    expect(await roleUserIds(roleId)).toEqual([userId]);

    const removed = await h.call('remove_role_from_user', { roleId, userId });
    expect(removed.text).toBe(
      "Workflow Success. Outputs: {'roleName': 'assignable', 'error': None, 'errorStatus': None}",
    );
    expect(await roleUserIds(roleId)).toEqual([]);
  });

  it('assign_role_to_user reports an unknown role as error 404', async () => {
    const result = await h.call('assign_role_to_user', { roleId: UNKNOWN_ID, userId });
    expect(result.outputs).toMatchObject({ roleName: null, errorStatus: '404' });
    expect(result.outputs.error).toEqual(expect.any(String));
  });

  it('remove_role_from_user reports an unknown role as error 404', async () => {
    const result = await h.call('remove_role_from_user', { roleId: UNKNOWN_ID, userId });
    expect(result.outputs).toMatchObject({ roleName: null, errorStatus: '404' });
    expect(result.outputs.error).toEqual(expect.any(String));
  });
});

describe('delete_role', () => {
  it('deletes the role', async () => {
    const roleId = await seedRole('doomed-role');
    const result = await h.call('delete_role', { roleId });
    expect(result.text).toBe(
      "Workflow Success. Outputs: {'statusCode': 204, 'error': None, 'errorStatus': None}",
    );
    expect((await h.scim('GET', `/v2/Roles/${roleId}`)).status).toBe(404);
  });

  it('reports an unknown role as error 404', async () => {
    const result = await h.call('delete_role', { roleId: UNKNOWN_ID });
    expect(result.outputs).toMatchObject({ statusCode: 404, errorStatus: '404' });
    expect(result.outputs.error).toEqual(expect.any(String));
  });
});
