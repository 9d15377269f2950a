import { describe, expect, it } from 'vitest';
import { startTestIdp, userBody } from './helpers.js';
import { modelClient } from './scim-model.js';

// Request bodies below are the shapes Microsoft Entra ID and Okta provisioning send
// (their published SCIM 2.0 integration guides), with ids substituted.
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const CORE_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';

type Json = Record<string, unknown>;

describe('SCIM provisioning clients (Entra ID, Okta)', async () => {
  const idp = await startTestIdp();
  // Every User and Group answered is checked against the models built from /Schemas.
  const { scim } = await modelClient(idp);
  const patch = (path: string, operations: unknown[], ifMatch?: string) =>
    scim('PATCH', path, {
      body: { schemas: [PATCH_OP], Operations: operations },
      ...(ifMatch ? { headers: { 'if-match': ifMatch } } : {}),
    });
  const versionOf = (resource: Json) => (resource.meta as Json).version as string;
  /** The values of `key` in a sorted listing (RFC 7644 §3.4.2.3). */
  const sortedBy = async (endpoint: string, filter: string, sort: string, key: string) => {
    const list = await scim('GET', `${endpoint}?filter=${encodeURIComponent(filter)}&${sort}`);
    expect(list.status).toBe(200);
    return (list.body.Resources as Json[]).map((r) => r[key]);
  };
  /** A Bulk request; results by bulkId or index, each status a string (RFC 7644 §3.7.3). */
  const bulk = async (operations: Json[]) => {
    const response = await scim('POST', '/Bulk', {
      body: {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkRequest'],
        Operations: operations,
      },
    });
    expect(response.status).toBe(200);
    const results = response.body.Operations as Json[];
    for (const result of results) expect(result.status).toEqual(expect.stringMatching(/^\d{3}$/));
    return results;
  };
  const scimError = (status: string) => ({
    schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
    status,
    detail: expect.any(String),
  });
  const memberIds = async (groupId: string) => {
    const group = await scim('GET', `/Groups/${groupId}`);
    return ((group.body.members as { value: string }[] | undefined) ?? []).map((m) => m.value);
  };
  const createUser = async (name: string) =>
    (await scim('POST', '/Users', { body: userBody(name) })).body.id as string;

  describe('group membership keeps every member not named', () => {
    it('PATCH remove path members with a value removes only the listed members', async () => {
      const [ann, ben, cal] = [
        await createUser('ann'),
        await createUser('ben'),
        await createUser('cal'),
      ];
      const group = await scim('POST', '/Groups', {
        body: {
          displayName: 'keepers',
          members: [{ value: ann }, { value: ben }, { value: cal }],
        },
      });
      const id = group.body.id as string;
      const removed = await patch(`/Groups/${id}`, [
        { op: 'remove', path: 'members', value: [{ value: ben }] },
      ]);
      expect(removed.status).toBe(200);
      expect((await memberIds(id)).sort()).toEqual([ann, cal].sort());
      const byDisplay = await patch(`/Groups/${id}`, [
        { op: 'Remove', path: 'members', value: [{ display: 'CAL' }] },
      ]);
      expect(byDisplay.status).toBe(200);
      expect(await memberIds(id)).toEqual([ann]);
      // Members added earlier in the same request can be removed by a later operation.
      const sameRequest = await patch(`/Groups/${id}`, [
        { op: 'add', path: 'members', value: [{ value: ben }, { value: cal }] },
        { op: 'remove', path: 'members', value: [{ value: cal }] },
        { op: 'remove', path: `members[value eq "${ben}"]` },
      ]);
      expect(sameRequest.status).toBe(200);
      expect(await memberIds(id)).toEqual([ann]);
      // Without a value the RFC meaning stays: every member goes.
      const all = await patch(`/Groups/${id}`, [{ op: 'remove', path: 'members' }]);
      expect(all.status).toBe(200);
      expect(await memberIds(id)).toEqual([]);
    });

    it('member add without display fills display from the userName', async () => {
      const dee = await createUser('dee');
      const group = await scim('POST', '/Groups', { body: { displayName: 'no-display' } });
      const added = await patch(`/Groups/${group.body.id}`, [
        { op: 'add', path: 'members', value: [{ value: dee }] },
      ]);
      expect(added.status).toBe(200);
      expect(added.body.members).toEqual([
        { value: dee, display: 'dee', $ref: `${idp.url}/scim2/Users/${dee}`, type: 'User' },
      ]);
    });

    it('member paths take any comparison in the value filter', async () => {
      const [eve, eli] = [await createUser('eve'), await createUser('eli')];
      const group = await scim('POST', '/Groups', {
        body: { displayName: 'filters', members: [{ value: eve }, { value: eli }] },
      });
      const id = group.body.id as string;
      const ne = await patch(`/Groups/${id}`, [
        { op: 'remove', path: `members[value ne "${eve}"]` },
      ]);
      expect(ne.status).toBe(200);
      expect(await memberIds(id)).toEqual([eve]);
      const sw = await patch(`/Groups/${id}`, [{ op: 'remove', path: 'MEMBERS[DISPLAY SW "ev"]' }]);
      expect(sw.status).toBe(200);
      expect(await memberIds(id)).toEqual([]);
    });
  });

  describe('Entra ID shapes', () => {
    it('pathless replace with dotted keys, "False" as a string, manager as a plain id', async () => {
      const boss = await createUser('boss');
      const id = await createUser('fay');
      const dotted = await patch(`/Users/${id}`, [
        {
          op: 'Replace',
          value: {
            'name.givenName': 'Faye',
            'name.familyName': 'Doe',
            'emails[type eq "work"].value': 'fay@work.example',
            [`${ENTERPRISE}:department`]: 'Finance',
          },
        },
      ]);
      expect(dotted.status).toBe(200);
      expect(dotted.body.name).toEqual({ givenName: 'Faye', familyName: 'Doe' });
      expect(dotted.body.emails).toEqual(
        expect.arrayContaining([{ type: 'work', value: 'fay@work.example' }]),
      );
      expect(dotted.body[ENTERPRISE]).toEqual({ department: 'Finance' });

      const manager = await patch(`/Users/${id}`, [
        { op: 'Add', path: `${ENTERPRISE}:manager`, value: boss },
      ]);
      expect(manager.status).toBe(200);
      expect(manager.body[ENTERPRISE]).toEqual({ department: 'Finance', manager: { value: boss } });
      const byManager = await scim(
        'GET',
        `/Users?filter=${encodeURIComponent(`${ENTERPRISE}:manager.value eq "${boss}"`)}`,
      );
      expect((byManager.body.Resources as Json[]).map((u) => u.id)).toEqual([id]);

      const disabled = await patch(`/Users/${id}`, [
        { op: 'Replace', path: 'active', value: 'False' },
      ]);
      expect(disabled.status).toBe(200);
      expect(disabled.body.active).toBe(false);
    });

    it('attribute names in any case, in bodies, paths and filters', async () => {
      const created = await scim('POST', '/Users', {
        body: {
          Schemas: [CORE_USER],
          UserName: 'gus',
          Name: { GivenName: 'Gus' },
          Emails: [{ Value: 'gus@example.com', Type: 'work', Primary: true }],
        },
      });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({
        userName: 'gus',
        name: { givenName: 'Gus' },
        emails: [{ value: 'gus@example.com', type: 'work', primary: true }],
      });
      const id = created.body.id as string;
      const patched = await patch(`/Users/${id}`, [
        { op: 'replace', path: 'NAME.FAMILYNAME', value: 'Grey' },
        { op: 'replace', path: 'Emails[Type EQ "WORK"].Value', value: 'gus@grey.example' },
      ]);
      expect(patched.status).toBe(200);
      expect(patched.body.name).toEqual({ givenName: 'Gus', familyName: 'Grey' });
      expect(patched.body.emails).toEqual([
        { value: 'gus@grey.example', type: 'work', primary: true },
      ]);
      const found = await scim(
        'GET',
        `/Users?filter=${encodeURIComponent('NAME.familyname EQ grey')}`,
      );
      expect((found.body.Resources as Json[]).map((u) => u.id)).toEqual([id]);
    });

    it('replays a provisioning cycle: create, update, add to group, remove from group, disable, delete', async () => {
      const userName = 'Test_User_ab6490ee-1e48-479e@testuser.com';
      const lookup = await scim(
        'GET',
        `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`,
      );
      expect(lookup.body.totalResults).toBe(0);

      const created = await scim('POST', '/Users', {
        body: {
          schemas: [CORE_USER, ENTERPRISE],
          externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
          userName,
          active: true,
          emails: [{ primary: true, type: 'work', value: 'Test_User_fd0ea19b@testuser.com' }],
          meta: { resourceType: 'User' },
          name: {
            formatted: 'givenName familyName',
            familyName: 'familyName',
            givenName: 'givenName',
          },
          roles: [],
        },
      });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      expect(created.body).toMatchObject({
        userName,
        active: true,
        externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
      });

      const updated = await patch(
        `/Users/${id}`,
        [
          {
            op: 'Replace',
            path: 'emails[type eq "work"].value',
            value: 'updatedEmail@microsoft.com',
          },
          { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
        ],
        versionOf(created.body),
      );
      expect(updated.status).toBe(200);
      expect(updated.headers.get('etag')).toBe(versionOf(updated.body));
      // The same update again, with the version from before it: refused, nothing changed.
      const stale = await patch(
        `/Users/${id}`,
        [{ op: 'Replace', path: 'name.familyName', value: 'lost' }],
        versionOf(created.body),
      );
      expect(stale.status).toBe(412);
      expect(stale.body).toEqual(scimError('412'));
      const afterUpdate = await scim('GET', `/Users/${id}`);
      expect(versionOf(afterUpdate.body)).toBe(versionOf(updated.body));
      expect(afterUpdate.body.emails).toEqual([
        { primary: true, type: 'work', value: 'updatedEmail@microsoft.com' },
      ]);
      expect(afterUpdate.body.name).toMatchObject({
        familyName: 'updatedFamilyName',
        givenName: 'givenName',
      });

      const group = await scim('POST', '/Groups', {
        body: {
          schemas: [
            GROUP,
            'http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group',
          ],
          externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
          displayName: 'displayName',
          meta: { resourceType: 'Group' },
        },
      });
      expect(group.status).toBe(201);
      const groupId = group.body.id as string;
      expect(group.body.externalId).toBe('8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159');
      const byName = await scim(
        'GET',
        `/Groups?excludedAttributes=members&filter=${encodeURIComponent('displayName eq "displayName"')}`,
      );
      expect((byName.body.Resources as Json[]).map((g) => g.id)).toEqual([groupId]);

      const other = await createUser('entra-other');
      await patch(`/Groups/${groupId}`, [
        { name: 'addMember', op: 'add', path: 'members', value: [{ $ref: null, value: other }] },
      ]);
      const added = await patch(`/Groups/${groupId}`, [
        { name: 'addMember', op: 'add', path: 'members', value: [{ $ref: null, value: id }] },
      ]);
      expect(added.status).toBe(200);
      expect((await memberIds(groupId)).sort()).toEqual([id, other].sort());
      const isMember = await scim(
        'GET',
        `/Groups?excludedAttributes=members&filter=${encodeURIComponent(`id eq "${groupId}" and members[value eq "${id}"]`)}`,
      );
      expect(isMember.body.totalResults).toBe(1);

      const removed = await patch(`/Groups/${groupId}`, [
        { name: 'removeMember', op: 'remove', path: 'members', value: [{ $ref: null, value: id }] },
      ]);
      expect(removed.status).toBe(200);
      expect(await memberIds(groupId)).toEqual([other]);

      // Sorted, and Bulk: a user created and added in one request, a refused operation beside.
      expect(
        await sortedBy('/Users', 'name.familyName pr', 'sortBy=name.familyName', 'id'),
      ).toEqual(expect.arrayContaining([id, other]));
      const results = await bulk([
        { method: 'POST', path: '/Users', bulkId: 'b1', data: { userName: 'entra-bulk-1' } },
        {
          method: 'PATCH',
          path: '/Users/no-such-user',
          data: {
            schemas: [PATCH_OP],
            Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
          },
        },
        {
          method: 'PATCH',
          path: `/Groups/${groupId}`,
          data: {
            schemas: [PATCH_OP],
            Operations: [{ op: 'add', path: 'members', value: [{ value: 'bulkId:b1' }] }],
          },
        },
      ]);
      expect(results.map((r) => r.status)).toEqual(['201', '404', '200']);
      expect(results[1]!.response).toEqual(scimError('404'));
      const bulkUser = (
        await scim('GET', String(results[0]!.location).replace(`${idp.url}/scim2`, ''))
      ).body;
      expect(bulkUser).toMatchObject({ userName: 'entra-bulk-1', active: true });
      expect((await memberIds(groupId)).sort()).toEqual([other, bulkUser.id].sort());
      expect(
        await sortedBy(
          '/Users',
          `userName sw "entra-"`,
          'sortBy=userName&sortOrder=descending',
          'userName',
        ),
      ).toEqual(['entra-other', 'entra-bulk-1']);

      const disabled = await patch(`/Users/${id}`, [
        { op: 'Replace', path: 'active', value: 'False' },
      ]);
      expect(disabled.status).toBe(200);
      expect((await scim('GET', `/Users/${id}`)).body.active).toBe(false);

      expect((await scim('DELETE', `/Users/${id}`)).status).toBe(204);
      expect((await scim('GET', `/Users/${id}`)).status).toBe(404);
      expect((await memberIds(groupId)).sort()).toEqual([other, bulkUser.id].sort());
    });
  });

  describe('Okta shapes', () => {
    it('replays a provisioning cycle: create, update, push group, add, remove, deactivate', async () => {
      const userName = 'test.user@okta.local';
      const lookup = await scim(
        'GET',
        `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}&startIndex=1&count=100`,
      );
      expect(lookup.status).toBe(200);
      expect(lookup.body.totalResults).toBe(0);

      const created = await scim('POST', '/Users', {
        body: {
          schemas: [CORE_USER],
          userName,
          name: { givenName: 'Test', familyName: 'User' },
          emails: [{ primary: true, value: userName, type: 'work' }],
          displayName: 'Test User',
          locale: 'en-US',
          externalId: '00ujl29u0le5T6Aj10h7',
          groups: [],
          password: '1mz050nq',
          active: true,
        },
      });
      expect(created.status).toBe(201);
      const id = created.body.id as string;

      const read = await scim('GET', `/Users/${id}`);
      const put = (ifMatch: string) =>
        scim('PUT', `/Users/${id}`, {
          body: {
            ...read.body,
            name: { givenName: 'Another', familyName: 'User' },
            displayName: 'Another User',
          },
          headers: { 'if-match': ifMatch },
        });
      const replaced = await put(read.headers.get('etag')!);
      expect(replaced.status).toBe(200);
      const stale = await put(read.headers.get('etag')!);
      expect(stale.status).toBe(412);
      expect(stale.body).toEqual(scimError('412'));
      expect((await scim('GET', `/Users/${id}`)).body).toMatchObject({
        displayName: 'Another User',
        name: { givenName: 'Another', familyName: 'User' },
        externalId: '00ujl29u0le5T6Aj10h7',
      });

      const group = await scim('POST', '/Groups', {
        body: { schemas: [GROUP], displayName: 'Test-SCIMv2', members: [] },
      });
      expect(group.status).toBe(201);
      const groupId = group.body.id as string;
      const renamed = await patch(`/Groups/${groupId}`, [
        { op: 'replace', value: { id: groupId, displayName: 'Test-SCIMv2-renamed' } },
      ]);
      expect(renamed.status).toBe(200);
      expect((await scim('GET', `/Groups/${groupId}`)).body.displayName).toBe(
        'Test-SCIMv2-renamed',
      );

      const other = await createUser('okta-other');
      await patch(`/Groups/${groupId}`, [
        { op: 'add', path: 'members', value: [{ value: other, display: 'okta-other' }] },
      ]);
      const added = await patch(`/Groups/${groupId}`, [
        { op: 'add', path: 'members', value: [{ value: id, display: userName }] },
      ]);
      expect(added.status).toBe(200);
      expect((await memberIds(groupId)).sort()).toEqual([id, other].sort());

      const removed = await patch(`/Groups/${groupId}`, [
        { op: 'remove', path: `members[value eq "${id}"]` },
      ]);
      expect(removed.status).toBe(200);
      expect(await memberIds(groupId)).toEqual([other]);

      // Bulk: a second group with the remaining member, and a duplicate name refused.
      const results = await bulk([
        {
          method: 'POST',
          path: '/Groups',
          bulkId: 'g2',
          data: { displayName: 'Test-SCIMv2-b', members: [{ value: other }] },
        },
        {
          method: 'POST',
          path: '/Groups',
          bulkId: 'g3',
          data: { displayName: 'test-scimv2-RENAMED' },
        },
      ]);
      expect(results.map((r) => r.status)).toEqual(['201', '409']);
      expect(results[1]!.response).toEqual({ ...scimError('409'), scimType: 'uniqueness' });
      const second = String(results[0]!.location).split('/').pop()!;
      expect(await memberIds(second)).toEqual([other]);
      expect(
        await sortedBy(
          '/Groups',
          'displayName sw "Test-SCIMv2"',
          'sortBy=displayName',
          'displayName',
        ),
      ).toEqual(['Test-SCIMv2-b', 'Test-SCIMv2-renamed']);
      expect((await scim('DELETE', `/Groups/${second}`)).status).toBe(204);

      const deactivated = await patch(`/Users/${id}`, [
        { op: 'replace', value: { active: false } },
      ]);
      expect(deactivated.status).toBe(200);
      expect((await scim('GET', `/Users/${id}`)).body.active).toBe(false);

      expect((await scim('DELETE', `/Groups/${groupId}`)).status).toBe(204);
      expect((await scim('GET', `/Users/${other}`)).body).not.toHaveProperty('groups');
    });
  });
});
