import { useTempDir } from '@mcp-identity/common/testing';
import { openIdpData } from '@mcp-identity/idp';
import { describe, expect, it } from 'vitest';
import { startTestIdp, userBody } from './helpers.js';

const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const CORE_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const AGENT = 'urn:scim:wso2:agent:schema';

type Json = Record<string, unknown>;

describe('SCIM reads: projections, pagination, discovery, Roles v1', async () => {
  const dataDir = useTempDir('idp-reads-')();
  const idp = await startTestIdp({ dataDir });
  const ids: string[] = [];
  for (const name of ['pam', 'pat', 'pia']) {
    const created = await idp.scim('POST', '/Users', {
      body: userBody(name, { [ENTERPRISE]: { department: 'Ops', employeeNumber: name } }),
    });
    ids.push(created.body.id as string);
  }
  const group = await idp.scim('POST', '/Groups', {
    body: { displayName: 'readers', externalId: 'ext-1', members: [{ value: ids[0] }] },
  });
  const groupId = group.body.id as string;

  describe('attributes and excludedAttributes', () => {
    it('attributes with a value filter keep only the matching entries (RFC 7644 §3.10)', async () => {
      const user = await idp.scim('POST', '/Users', {
        body: userBody('vfilter', {
          emails: [
            { value: 'home@example.com', type: 'home' },
            { value: 'work@example.com', type: 'work', primary: true },
          ],
        }),
      });
      const id = user.body.id as string;
      const entries = await idp.scim(
        'GET',
        `/Users/${id}?attributes=${encodeURIComponent('emails[type eq "work"]')}`,
      );
      expect(entries.body).toEqual({
        schemas: expect.any(Array),
        id,
        emails: [{ value: 'work@example.com', type: 'work', primary: true }],
      });
      const values = await idp.scim('POST', '/Users/.search', {
        body: {
          schemas: [SEARCH],
          filter: 'userName eq "vfilter"',
          attributes: ['emails[TYPE eq "work"].value', 'userName'],
        },
      });
      expect(values.body.Resources).toEqual([
        {
          schemas: expect.any(Array),
          id,
          userName: 'vfilter',
          emails: [{ value: 'work@example.com' }],
        },
      ]);
      const none = await idp.scim(
        'GET',
        `/Users/${id}?attributes=${encodeURIComponent('emails[type eq "other"]')}`,
      );
      expect(none.body).toEqual({ schemas: expect.any(Array), id });
      expect((await idp.scim('DELETE', `/Users/${id}`)).status).toBe(204);
    });

    it('GET /Users/{id}?attributes keeps only those, plus id and schemas', async () => {
      const response = await idp.scim(
        'GET',
        `/Users/${ids[0]}?attributes=userName,name.givenName,${ENTERPRISE}:department`,
      );
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        schemas: expect.any(Array),
        id: ids[0],
        userName: 'pam',
        name: { givenName: 'pam' },
        [ENTERPRISE]: { department: 'Ops' },
      });
    });

    it('excludedAttributes never removes id or schemas', async () => {
      const response = await idp.scim(
        'GET',
        '/Users?filter=userName%20eq%20pat&excludedAttributes=id,schemas,emails,meta,NAME.familyName',
      );
      const [resource] = response.body.Resources as Json[];
      expect(resource).toMatchObject({ id: ids[1], userName: 'pat', name: { givenName: 'pat' } });
      expect(resource!.schemas).toContain(CORE_USER);
      expect(resource).not.toHaveProperty('emails');
      expect(resource).not.toHaveProperty('meta');
      expect(resource!.name).not.toHaveProperty('familyName');
    });

    it('.search takes attributes as a list', async () => {
      const response = await idp.scim('POST', '/Users/.search', {
        body: {
          schemas: [SEARCH],
          filter: 'userName sw p',
          attributes: ['userName', 'emails.value'],
        },
      });
      const resources = (response.body.Resources as Json[]).sort((a, b) =>
        String(a.userName).localeCompare(String(b.userName)),
      );
      expect(resources).toEqual(
        ['pam', 'pat', 'pia'].map((name, i) => ({
          schemas: expect.any(Array),
          id: ids[i],
          userName: name,
          emails: [{ value: `${name}@example.com` }],
        })),
      );
    });

    it('works on Groups, Roles and Agents', async () => {
      const groups = await idp.scim('GET', `/Groups/${groupId}?excludedAttributes=members`);
      expect(groups.body).toMatchObject({ id: groupId, displayName: 'readers' });
      expect(groups.body).not.toHaveProperty('members');
      const groupSearch = await idp.scim('POST', '/Groups/.search', {
        body: { schemas: [SEARCH], attributes: ['displayName'] },
      });
      expect(groupSearch.body.Resources).toEqual([
        {
          schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
          id: groupId,
          displayName: 'readers',
        },
      ]);
      const role = await idp.scim('POST', '/v2/Roles', { body: { displayName: 'projected' } });
      const roleRead = await idp.scim('GET', `/v2/Roles/${role.body.id}?attributes=displayName`);
      expect(Object.keys(roleRead.body).sort()).toEqual(['displayName', 'id', 'schemas']);
      const agent = await idp.scim('POST', '/Agents', {
        body: { [AGENT]: { DisplayName: 'Bot', Owner: ids[0] } },
      });
      const agents = await idp.scim('GET', `/Agents?attributes=${AGENT}:DisplayName`);
      expect(agents.body.Resources).toEqual([
        { schemas: expect.any(Array), id: agent.body.id, [AGENT]: { DisplayName: 'Bot' } },
      ]);
    });
  });

  describe('pagination', () => {
    it('count=0 reports the real totalResults', async () => {
      const response = await idp.scim('GET', '/Users?filter=userName%20sw%20p&count=0');
      expect(response.body).toMatchObject({ totalResults: 3, itemsPerPage: 0, Resources: [] });
      const groups = await idp.scim('GET', '/Groups?count=0');
      expect(groups.body).toMatchObject({ totalResults: 1, itemsPerPage: 0, Resources: [] });
    });

    it('totalResults follows every write between identical searches', async () => {
      const total = async () =>
        (await idp.scim('GET', '/Users?filter=userName%20sw%20q&count=1')).body.totalResults;
      expect(await total()).toBe(0);
      const quinn = (await idp.scim('POST', '/Users', { body: userBody('quinn') })).body.id;
      expect(await total()).toBe(1);
      // A write through another connection to the same database (the management commands).
      const data = openIdpData(dataDir);
      try {
        await data.service.users.create('user', { userName: 'quincy' });
      } finally {
        data.close();
      }
      expect(await total()).toBe(2);
      await idp.scim('DELETE', `/Users/${quinn}`);
      expect(await total()).toBe(1);
    });

    it('a page past the end carries "Resources": []', async () => {
      const response = await idp.scim(
        'GET',
        '/Users?filter=userName%20sw%20p&startIndex=10&count=2',
      );
      expect(response.body).toMatchObject({
        totalResults: 3,
        startIndex: 10,
        itemsPerPage: 0,
        Resources: [],
      });
      const first = await idp.scim('GET', '/Users?filter=userName%20sw%20p&startIndex=1&count=2');
      const second = await idp.scim('GET', '/Users?filter=userName%20sw%20p&startIndex=3&count=2');
      const names = [...(first.body.Resources as Json[]), ...(second.body.Resources as Json[])];
      expect(second.body.itemsPerPage).toBe(1);
      expect(names.map((u) => u.userName).sort()).toEqual(['pam', 'pat', 'pia']);
    });
  });

  describe('discovery', () => {
    it('/Schemas lists every schema with complete sub-attributes', async () => {
      const response = await idp.scim('GET', '/Schemas');
      const schemas = response.body.Resources as { id: string; attributes: Json[] }[];
      expect(schemas.map((s) => s.id)).toEqual([
        CORE_USER,
        ENTERPRISE,
        'urn:scim:schemas:extension:custom:User',
        'urn:scim:wso2:schema',
        AGENT,
        'urn:ietf:params:scim:schemas:core:2.0:Group',
        'urn:ietf:params:scim:schemas:extension:2.0:Role',
      ]);
      const groups = schemas[0]!.attributes.find((a) => a.name === 'groups');
      expect((groups!.subAttributes as Json[]).map((a) => [a.name, a.type])).toEqual([
        ['value', 'string'],
        ['$ref', 'reference'],
        ['display', 'string'],
        ['type', 'string'],
      ]);
      expect(response.body.totalResults).toBe(7);
    });

    it('/Schemas/{id} and /ResourceTypes/{id} serve one definition, 404 otherwise', async () => {
      const one = await idp.scim('GET', `/Schemas/${ENTERPRISE}`);
      expect(one.status).toBe(200);
      expect(one.body).toMatchObject({ id: ENTERPRISE, name: 'EnterpriseUser' });
      const type = await idp.scim('GET', '/ResourceTypes/Group', { token: '' });
      expect(type.body).toMatchObject({ id: 'Group', endpoint: '/Groups' });
      expect((await idp.scim('GET', '/Schemas/urn:nope')).status).toBe(404);
      expect((await idp.scim('GET', '/ResourceTypes/Nope', { token: '' })).status).toBe(404);
    });

    it.each([
      ['POST', '/Schemas'],
      ['PUT', `/Schemas/${CORE_USER}`],
      ['DELETE', '/ResourceTypes/User'],
      ['PATCH', '/ServiceProviderConfig'],
      ['POST', '/ResourceTypes'],
    ])('%s %s answers 405', async (method, path) => {
      const response = await idp.scim(method, path, { body: {} });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('GET');
      expect(response.body).toMatchObject({ status: '405' });
    });
  });

  it('groups keep an externalId through create, PATCH and PUT', async () => {
    expect(group.body.externalId).toBe('ext-1');
    const patched = await idp.scim('PATCH', `/Groups/${groupId}`, {
      body: {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'externalId', value: 'ext-2' }],
      },
    });
    expect(patched.body.externalId).toBe('ext-2');
    const put = await idp.scim('PUT', `/Groups/${groupId}`, {
      body: { displayName: 'readers', externalId: 'ext-3', members: [{ value: ids[0] }] },
    });
    expect(put.body).toMatchObject({
      externalId: 'ext-3',
      members: [expect.objectContaining({ value: ids[0] })],
    });
    const removed = await idp.scim('PATCH', `/Groups/${groupId}`, {
      body: { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'externalId' }] },
    });
    expect(removed.body).not.toHaveProperty('externalId');
  });

  it('serves Roles v1 at /scim2/Roles over the same roles as v2', async () => {
    const created = await idp.scim('POST', '/Roles', {
      body: {
        schemas: ['urn:ietf:params:scim:schemas:extension:2.0:Role'],
        displayName: 'v1-role',
        users: [{ value: ids[0] }],
        permissions: ['internal_login'],
      },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect(created.headers.get('location')).toBe(`${idp.url}/scim2/Roles/${id}`);
    expect(created.body).toMatchObject({ displayName: 'v1-role', permissions: ['internal_login'] });
    const v2 = await idp.scim('GET', `/v2/Roles/${id}`);
    expect(v2.body.permissions).toEqual([{ value: 'internal_login', display: 'internal_login' }]);
    const patched = await idp.scim('PATCH', `/Roles/${id}`, {
      body: {
        schemas: [PATCH_OP],
        Operations: [{ op: 'add', path: 'users', value: [{ value: ids[1] }] }],
      },
    });
    expect((patched.body.users as Json[]).map((u) => u.value).sort()).toEqual(
      [ids[0], ids[1]].sort(),
    );
    const list = await idp.scim(
      'GET',
      `/Roles?filter=${encodeURIComponent('displayName eq v1-role')}`,
    );
    expect((list.body.Resources as Json[]).map((r) => (r.meta as Json).location)).toEqual([
      `${idp.url}/scim2/Roles/${id}`,
    ]);
    const readOnly = await idp.token(['internal_role_mgt_view']);
    expect((await idp.scim('GET', `/Roles/${id}`, { token: readOnly })).status).toBe(200);
    expect((await idp.scim('DELETE', `/Roles/${id}`, { token: readOnly })).status).toBe(403);
    expect((await idp.scim('DELETE', `/Roles/${id}`)).status).toBe(204);
  });
});
