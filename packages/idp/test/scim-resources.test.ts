import { describe, expect, it } from 'vitest';
import { startTestIdp, userBody } from './helpers.js';

const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const BULK = 'urn:ietf:params:scim:api:messages:2.0:BulkRequest';
const AGENT = 'urn:scim:wso2:agent:schema';

describe('SCIM groups, roles, bulk, agents and discovery', async () => {
  const idp = await startTestIdp();
  const createUser = async (name: string) =>
    (await idp.scim('POST', '/Users', { body: userBody(name) })).body.id as string;
  const alice = await createUser('alice');
  const bob = await createUser('bob');

  describe('groups', () => {
    it('creates a group with members and refuses bad names and duplicates', async () => {
      const created = await idp.scim('POST', '/Groups', {
        body: {
          schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
          displayName: 'engineers',
          members: [{ value: alice, display: 'alice' }],
        },
      });
      expect(created.status).toBe(201);
      expect(created.headers.get('location')).toBe(`${idp.url}/scim2/Groups/${created.body.id}`);
      expect(created.body).toMatchObject({
        displayName: 'engineers',
        members: [{ value: alice, display: 'alice', $ref: `${idp.url}/scim2/Users/${alice}` }],
        meta: { resourceType: 'Group' },
      });
      const user = await idp.scim('GET', `/Users/${alice}`);
      expect(user.body.groups).toEqual([
        expect.objectContaining({ value: created.body.id, display: 'engineers' }),
      ]);

      for (const name of ['ab', 'has space', 'x'.repeat(31)]) {
        const bad = await idp.scim('POST', '/Groups', { body: { displayName: name } });
        expect(bad.status).toBe(400);
        expect(bad.body.detail).toContain('^[\\S]{3,30}$');
      }
      const duplicate = await idp.scim('POST', '/Groups', { body: { displayName: 'engineers' } });
      expect(duplicate.status).toBe(409);
      expect(duplicate.body.detail).toBe(
        'Group with name: engineers already exists in the system.',
      );
      expect((await idp.scim('GET', '/Groups/nope')).body).toEqual({
        schemas: [ERROR],
        detail: 'Group not found in the user store.',
        status: '404',
      });
    });

    it('applies WSO2 member rules on PATCH', async () => {
      const group = (await idp.scim('POST', '/Groups', { body: { displayName: 'patchers' } })).body;
      const patch = (operations: unknown[]) =>
        idp.scim('PATCH', `/Groups/${group.id}`, {
          body: { schemas: [PATCH_OP], Operations: operations },
        });

      // A member's display is readOnly (RFC 7643 §4.2): accepted and replaced by the userName.
      const otherDisplay = await patch([
        { op: 'add', path: 'members', value: [{ value: alice, display: 'Alice Smith' }] },
      ]);
      expect(otherDisplay.status).toBe(200);
      expect(otherDisplay.body.members).toEqual([
        { value: alice, display: 'alice', $ref: `${idp.url}/scim2/Users/${alice}`, type: 'User' },
      ]);
      const unknownUser = await patch([
        { op: 'add', path: 'members', value: [{ value: 'no-such-user', display: 'bob' }] },
      ]);
      expect(unknownUser.status).toBe(400);
      expect(unknownUser.body.detail).toBe(
        "Provided SCIM user Id: no-such-user doesn't match with the userID obtained from user-store for the provided username.",
      );
      const added = await patch([
        {
          op: 'add',
          path: 'members',
          value: [
            { value: alice, display: 'alice' },
            { value: bob, display: 'bob' },
          ],
        },
      ]);
      expect(added.status).toBe(200);
      expect((added.body.members as unknown[]).length).toBe(2);
      const again = await patch([
        { op: 'add', path: 'members', value: [{ value: alice, display: 'alice' }] },
      ]);
      expect((again.body.members as unknown[]).length).toBe(2);

      const removeNoPath = await patch([{ op: 'remove' }]);
      expect(removeNoPath.body).toMatchObject({
        scimType: 'noTarget',
        detail: 'No path value specified for remove operation',
      });
      const noMatch = await patch([{ op: 'remove', path: 'members[value co "no-such-id"]' }]);
      expect(noMatch.status).toBe(200);
      expect((noMatch.body.members as unknown[]).length).toBe(2);
      const removed = await patch([{ op: 'remove', path: `members[value eq ${alice}]` }]);
      expect(removed.body.members).toEqual([expect.objectContaining({ value: bob })]);
      const byName = await patch([{ op: 'remove', path: 'members[display eq "bob"]' }]);
      expect(byName.body).not.toHaveProperty('members');
      const badPath = await patch([{ op: 'replace', path: 'description', value: 'x' }]);
      expect(badPath.body.detail).toBe('Not a valid attribute.');
      const unknown = await idp.scim('PATCH', '/Groups/nope', {
        body: { Operations: [{ op: 'replace', path: 'displayName', value: 'abc' }] },
      });
      expect(unknown.status).toBe(404);
      expect(unknown.body.detail).toBe('No group with the id : nope in the user store.');
    });

    it('loses no member when many PATCHes of one group run concurrently', async () => {
      const group = (await idp.scim('POST', '/Groups', { body: { displayName: 'crowd' } })).body;
      const users = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          idp.admin.service.users.create('user', { userName: `crowd${i}` }),
        ),
      );
      const responses = await Promise.all(
        users.map(({ row }) =>
          idp.scim('PATCH', `/Groups/${group.id}`, {
            body: {
              schemas: [PATCH_OP],
              Operations: [
                { op: 'add', path: 'members', value: [{ value: row.id, display: row.userName }] },
              ],
            },
          }),
        ),
      );
      expect(responses.map((r) => r.status)).toEqual(users.map(() => 200));
      const read = await idp.scim('GET', `/Groups/${group.id}`);
      expect((read.body.members as unknown[]).length).toBe(12);
    });

    it('deletes a group with 204', async () => {
      const group = (await idp.scim('POST', '/Groups', { body: { displayName: 'short-lived' } }))
        .body;
      expect((await idp.scim('DELETE', `/Groups/${group.id}`)).status).toBe(204);
      expect((await idp.scim('DELETE', `/Groups/${group.id}`)).status).toBe(404);
    });
  });

  describe('roles v2', () => {
    it('creates, reads, patches and deletes a role', async () => {
      const created = await idp.scim('POST', '/v2/Roles', {
        body: {
          schemas: ['urn:ietf:params:scim:schemas:extension:2.0:Role'],
          displayName: 'loginRole',
          permissions: [{ value: 'internal_login', display: 'Internal Login' }],
        },
      });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      expect(created.headers.get('location')).toBe(`${idp.url}/scim2/v2/Roles/${id}`);
      expect(created.body).toMatchObject({
        displayName: 'loginRole',
        audience: { type: 'organization', display: 'carbon.super' },
        meta: { resourceType: 'Role' },
      });
      const duplicate = await idp.scim('POST', '/v2/Roles', { body: { displayName: 'loginRole' } });
      expect(duplicate.status).toBe(409);
      expect(duplicate.body.detail).toMatch(
        /^Role already exist for the role name: loginRole audience: organization audienceId: /,
      );
      const badPermission = await idp.scim('POST', '/v2/Roles', {
        body: { displayName: 'other', permissions: [{ value: 'no_such_scope' }] },
      });
      expect(badPermission.status).toBe(400);
      expect(badPermission.body.scimType).toBe('invalidValue');

      const patched = await idp.scim('PATCH', `/v2/Roles/${id}`, {
        body: {
          schemas: [PATCH_OP],
          Operations: [
            { op: 'add', path: 'users', value: [{ value: alice }, { value: bob }] },
            { op: 'remove', path: `users[value eq ${bob}]` },
            { op: 'replace', value: { permissions: [{ value: 'internal_user_mgt_list' }] } },
          ],
        },
      });
      expect(patched.status).toBe(200);
      expect(patched.body.users).toEqual([
        expect.objectContaining({ value: alice, display: 'alice' }),
      ]);
      expect(patched.body.permissions).toEqual([
        { value: 'internal_user_mgt_list', display: 'internal_user_mgt_list' },
      ]);
      const user = await idp.scim('GET', `/Users/${alice}`);
      expect(user.body.roles).toEqual([
        expect.objectContaining({ value: id, display: 'loginRole' }),
      ]);
      const byFilter = await idp.scim('PATCH', `/v2/Roles/${id}`, {
        body: {
          schemas: [PATCH_OP],
          Operations: [
            { op: 'add', path: 'users', value: [{ value: bob }] },
            { op: 'remove', path: 'Users[display sw "B" or value eq "nobody"]' },
            { op: 'remove', path: 'permissions[value co "user_mgt"]' },
          ],
        },
      });
      expect(byFilter.status).toBe(200);
      expect((byFilter.body.users as { value: string }[]).map((u) => u.value)).toEqual([alice]);
      expect(byFilter.body.permissions).toEqual([]);

      expect((await idp.scim('DELETE', `/v2/Roles/${id}`)).status).toBe(204);
      const gone = await idp.scim('GET', `/v2/Roles/${id}`);
      expect(gone.status).toBe(404);
      expect(gone.body.detail).toBe(
        `A role doesn't exist with id: ${id} in the tenantDomain: carbon.super`,
      );
    });
  });

  describe('bulk', () => {
    it('runs users, then groups, then roles, resolving bulkId references', async () => {
      const response = await idp.scim('POST', '/Bulk', {
        body: {
          schemas: [BULK],
          failOnErrors: 0,
          Operations: [
            {
              method: 'POST',
              path: '/v2/Roles',
              bulkId: 'r1',
              data: { displayName: 'bulk-role', users: [{ value: 'bulkId:u1' }] },
            },
            {
              method: 'POST',
              path: '/Groups',
              bulkId: 'g1',
              data: {
                displayName: 'bulk-group',
                members: [{ value: 'bulkId:u1' }, { value: 'bulkId:u2' }],
              },
            },
            { method: 'POST', path: '/Users', bulkId: 'u1', data: userBody('bulk1') },
            { method: 'POST', path: '/Users', bulkId: 'u2', data: userBody('bulk2') },
            { method: 'POST', path: '/Users', bulkId: 'dup', data: userBody('alice') },
          ],
        },
      });
      expect(response.status).toBe(200);
      const ops = response.body.Operations as Record<string, unknown>[];
      expect(response.body.schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:BulkResponse']);
      // RFC 7644 §3.7.3: string statuses; a failure carries its SCIM error, a success none.
      expect(ops.map((o) => [o.bulkId, o.status])).toEqual([
        ['u1', '201'],
        ['u2', '201'],
        ['dup', '409'],
        ['g1', '201'],
        ['r1', '201'],
      ]);
      expect(ops[0]).not.toHaveProperty('response');
      expect(ops[2]!.response).toMatchObject({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
        status: '409',
        scimType: 'uniqueness',
      });
      const read = async (o: Record<string, unknown>) =>
        (await idp.scim('GET', String(o.location).replace(`${idp.url}/scim2`, ''))).body;
      const u1 = await read(ops[0]!);
      expect(ops[0]!.location).toBe(`${idp.url}/scim2/Users/${u1.id}`);
      // The version at creation; adding u1 to the group and role afterwards made new ones.
      expect(ops[0]!.version).toBe('W/"1"');
      expect((u1.meta as { version: string }).version).not.toBe('W/"1"');
      const group = (await read(ops[3]!)) as { members: { value: string }[] };
      expect(group.members.map((m) => m.value)).toContain(u1.id);
      const role = (await read(ops[4]!)) as { users: { value: string }[] };
      expect(role.users.map((u) => u.value)).toEqual([u1.id]);
    });

    it('stops after failOnErrors failures and validates bulkIds and limits', async () => {
      const stop = await idp.scim('POST', '/Bulk', {
        body: {
          schemas: [BULK],
          failOnErrors: 1,
          Operations: [
            { method: 'POST', path: '/Users', bulkId: 'a', data: userBody('alice') },
            { method: 'POST', path: '/Users', bulkId: 'b', data: userBody('never') },
          ],
        },
      });
      expect((stop.body.Operations as unknown[]).length).toBe(1);
      expect((await idp.scim('GET', '/Users?filter=userName%20eq%20never')).body.totalResults).toBe(
        0,
      );

      const noBulkId = await idp.scim('POST', '/Bulk', {
        body: {
          schemas: [BULK],
          Operations: [{ method: 'POST', path: '/Users', data: userBody('x1') }],
        },
      });
      expect(noBulkId.status).toBe(400);
      expect(noBulkId.body.detail).toContain('BULK_ID');
      const duplicate = await idp.scim('POST', '/Bulk', {
        body: {
          schemas: [BULK],
          Operations: [
            { method: 'POST', path: '/Users', bulkId: 'same', data: userBody('x2') },
            { method: 'POST', path: '/Users', bulkId: 'same', data: userBody('x3') },
          ],
        },
      });
      expect(duplicate.body.detail).toBe('Duplicate bulkId found: same');
      const tooMany = await idp.scim('POST', '/Bulk', {
        body: {
          schemas: [BULK],
          Operations: Array.from({ length: 1001 }, (_, i) => ({
            method: 'DELETE',
            path: `/Users/${i}`,
          })),
        },
      });
      expect(tooMany.status).toBe(413);
    });

    it('checks per-operation bulk scopes when the token lacks internal_bulk_resource_create', async () => {
      const token = await idp.token(['internal_bulk_user_create']);
      const response = await idp.scim('POST', '/Bulk', {
        token,
        body: {
          schemas: [BULK],
          Operations: [
            { method: 'POST', path: '/Users', bulkId: 'ok', data: userBody('scoped1') },
            {
              method: 'POST',
              path: '/Groups',
              bulkId: 'no',
              data: { displayName: 'scoped-group' },
            },
          ],
        },
      });
      const ops = response.body.Operations as { status: string; response?: unknown }[];
      expect(ops.map((o) => o.status)).toEqual(['201', '403']);
      expect(ops[1]!.response).toMatchObject({ status: '403' });
    });
  });

  describe('agents', () => {
    it('generates AGENT/<uuid> and a password returned only on creation', async () => {
      const created = await idp.scim('POST', '/Agents', {
        body: {
          schemas: [AGENT],
          [AGENT]: { DisplayName: 'Vetassist AI', Description: 'helps', Owner: alice },
        },
      });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      expect(created.body.userName).toMatch(/^AGENT\/[0-9a-f-]{36}$/);
      expect(created.body.password).toEqual(expect.any(String));
      expect((created.body.password as string).length).toBeGreaterThanOrEqual(16);
      expect(created.headers.get('location')).toBe(`${idp.url}/scim2/Agents/${id}`);
      expect(created.body.meta).toMatchObject({ resourceType: 'Agent' });
      expect(created.body.schemas).toContain(AGENT);

      const read = await idp.scim('GET', `/Agents/${id}`);
      expect(read.body).not.toHaveProperty('password');
      expect(read.body[AGENT]).toEqual({
        DisplayName: 'Vetassist AI',
        Description: 'helps',
        Owner: alice,
      });
      const list = await idp.scim('GET', '/Agents');
      expect(JSON.stringify(list.body)).not.toContain('"password"');
      expect((list.body.Resources as { id: string }[]).map((a) => a.id)).toContain(id);
      expect((await idp.scim('GET', `/Users/${id}`)).status).toBe(404);

      const badName = await idp.scim('POST', '/Agents', {
        body: { userName: 'PRIMARY/x', [AGENT]: {} },
      });
      expect(badName.status).toBe(400);
      expect(badName.body.detail).toBe('Agent username cannot contain domain name or be null.');
      expect((await idp.scim('DELETE', `/Agents/${id}`)).status).toBe(204);
    });
  });

  describe('discovery', () => {
    it('serves ServiceProviderConfig, ResourceTypes (User and Group only) and Schemas', async () => {
      const config = await idp.scim('GET', '/ServiceProviderConfig', { token: '' });
      expect(config.body).toMatchObject({
        patch: { supported: true },
        bulk: { supported: true, maxOperations: 1000, maxPayloadSize: 1048576 },
        filter: { supported: true, maxResults: 200 },
        sort: { supported: true },
        etag: { supported: true },
      });
      const types = await idp.scim('GET', '/ResourceTypes', { token: '' });
      expect((types.body.Resources as { name: string }[]).map((t) => t.name)).toEqual([
        'User',
        'Group',
      ]);
      const schemas = await idp.scim('GET', '/Schemas');
      const custom = (
        schemas.body.Resources as { id: string; attributes: { name: string }[] }[]
      ).find((s) => s.id === 'urn:scim:schemas:extension:custom:User');
      expect(custom?.attributes.map((a) => a.name).sort()).toEqual([
        'contractEndDate',
        'customerTier',
      ]);
    });

    it('answers unknown SCIM paths with a SCIM 404', async () => {
      const response = await idp.scim('GET', '/Nothing');
      expect(response.status).toBe(404);
      expect(response.body.status).toBe('404');
    });
  });
});
