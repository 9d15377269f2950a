import { describe, expect, it } from 'vitest';
import { startTestIdp, userBody } from './helpers.js';

const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const CUSTOM = 'urn:scim:schemas:extension:custom:User';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

describe('SCIM /scim2/Users contract', async () => {
  const idp = await startTestIdp();

  it('creates a user: 201, Location, scim+json, no password in the body', async () => {
    const response = await idp.scim('POST', '/Users', { body: userBody('alice') });
    expect(response.status).toBe(201);
    expect(response.headers.get('content-type')).toBe('application/scim+json');
    const id = response.body.id as string;
    expect(response.headers.get('location')).toBe(`${idp.url}/scim2/Users/${id}`);
    expect(response.body).toMatchObject({
      userName: 'alice',
      emails: [{ value: 'alice@example.com', primary: true }],
      meta: { resourceType: 'User', location: `${idp.url}/scim2/Users/${id}` },
    });
    expect(response.body).not.toHaveProperty('password');
    expect((response.body.schemas as string[])[0]).toBe(
      'urn:ietf:params:scim:schemas:core:2.0:User',
    );

    const read = await idp.scim('GET', `/Users/${id}`);
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty('password');
    expect(read.body.userName).toBe('alice');
  });

  it('refuses a duplicate userName with 409 uniqueness, case-insensitively', async () => {
    const response = await idp.scim('POST', '/Users', { body: userBody('ALICE') });
    expect(response.status).toBe(409);
    expect(response.body).toEqual({
      schemas: [ERROR],
      scimType: 'uniqueness',
      detail: 'User with the name: ALICE already exists in the system.',
      status: '409',
    });
  });

  it('answers unknown ids with WSO2 texts', async () => {
    expect((await idp.scim('GET', '/Users/nope')).body).toEqual({
      schemas: [ERROR],
      detail: 'User not found in the user store.',
      status: '404',
    });
    const patch = await idp.scim('PATCH', '/Users/nope', {
      body: {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'replace', path: 'active', value: false }],
      },
    });
    expect(patch.status).toBe(404);
    expect(patch.body.detail).toBe('No user with the id : nope in the user store.');
    const del = await idp.scim('DELETE', '/Users/nope');
    expect(del.status).toBe(404);
    expect(del.body.detail).toBe('Specified resource (e.g., User) or endpoint does not exist.');
  });

  it('applies update_user_profile: one pathless replace with URN-keyed extension objects', async () => {
    const created = await idp.scim('POST', '/Users', {
      body: userBody('bob', {
        addresses: [
          { type: 'home', formatted: 'Home St' },
          { type: 'work', formatted: 'Old' },
        ],
      }),
    });
    const id = created.body.id as string;
    const patch = await idp.scim('PATCH', `/Users/${id}`, {
      body: {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [
          {
            op: 'replace',
            value: {
              addresses: [{ type: 'work', formatted: 'EU' }],
              [ENTERPRISE]: { department: 'Sales', employeeNumber: 'E-7', costCenter: 'CC1' },
              [CUSTOM]: { customerTier: 'gold', contractEndDate: '2027-01-31' },
            },
          },
        ],
      },
    });
    expect(patch.status).toBe(200);
    expect(patch.body).toMatchObject({
      addresses: [
        { type: 'home', formatted: 'Home St' },
        { type: 'work', formatted: 'EU' },
      ],
      [ENTERPRISE]: { department: 'Sales', employeeNumber: 'E-7', costCenter: 'CC1' },
      [CUSTOM]: { customerTier: 'gold', contractEndDate: '2027-01-31' },
    });
    const read = await idp.scim('GET', `/Users/${id}`);
    expect(read.body[CUSTOM]).toEqual({ customerTier: 'gold', contractEndDate: '2027-01-31' });
  });

  it('supports path operations: sub-attributes, value filters, URN paths, remove', async () => {
    const created = await idp.scim('POST', '/Users', { body: userBody('dora') });
    const id = created.body.id as string;
    const patch = await idp.scim('PATCH', `/Users/${id}`, {
      body: {
        Operations: [
          { op: 'Replace', path: 'name.givenName', value: 'Dorothy' },
          { op: 'add', path: 'addresses[type eq "work"].formatted', value: 'APAC' },
          { op: 'replace', path: `${ENTERPRISE}:department`, value: 'R&D' },
          { op: 'add', path: 'emails', value: [{ type: 'work', value: 'dora@work.example' }] },
          { op: 'remove', path: 'emails[type eq work]' },
          { op: 'replace', path: 'active', value: false },
        ],
      },
    });
    expect(patch.status).toBe(200);
    expect(patch.body).toMatchObject({
      name: { givenName: 'Dorothy', familyName: 'Tester' },
      addresses: [{ type: 'work', formatted: 'APAC' }],
      [ENTERPRISE]: { department: 'R&D' },
      emails: [{ value: 'dora@example.com', primary: true }],
      active: false,
    });
  });

  it('rejects an undefined custom attribute with a 400 naming it', async () => {
    const response = await idp.scim('POST', '/Users', {
      body: userBody('erin', { [CUSTOM]: { loyaltyPoints: '12' } }),
    });
    expect(response.status).toBe(400);
    expect(response.body.status).toBe('400');
    expect(response.body.detail).toContain('loyaltyPoints');
    const created = await idp.scim('POST', '/Users', { body: userBody('erin') });
    const patch = await idp.scim('PATCH', `/Users/${created.body.id}`, {
      body: { Operations: [{ op: 'replace', value: { [CUSTOM]: { loyaltyPoints: '1' } } }] },
    });
    expect(patch.status).toBe(400);
    expect(patch.body.detail).toContain('loyaltyPoints');
  });

  it('rejects unknown attributes, userName changes, bad operations and missing userName', async () => {
    const unknown = await idp.scim('POST', '/Users', { body: userBody('frank', { shoeSize: 44 }) });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ scimType: 'invalidValue', status: '400' });
    expect(unknown.body.detail).toContain('shoeSize');

    const created = await idp.scim('POST', '/Users', { body: userBody('frank') });
    const id = created.body.id as string;
    const rename = await idp.scim('PATCH', `/Users/${id}`, {
      body: { Operations: [{ op: 'replace', path: 'userName', value: 'francis' }] },
    });
    expect(rename.status).toBe(400);
    expect(rename.body.detail).toBe('Attribute userName cannot be modified.');

    const badOp = await idp.scim('PATCH', `/Users/${id}`, {
      body: { Operations: [{ op: 'move', path: 'x' }] },
    });
    expect(badOp.status).toBe(400);
    expect(badOp.body.detail).toBe('Unknown operation: move');

    const noOps = await idp.scim('PATCH', `/Users/${id}`, { body: { schemas: [] } });
    expect(noOps.body).toMatchObject({ scimType: 'invalidSyntax', status: '400' });

    const noTarget = await idp.scim('PATCH', `/Users/${id}`, {
      body: { Operations: [{ op: 'remove' }] },
    });
    expect(noTarget.body).toMatchObject({
      scimType: 'noTarget',
      detail: 'No path value specified for remove operation',
    });

    const missing = await idp.scim('POST', '/Users', {
      body: { emails: [{ value: 'x@example.com' }] },
    });
    expect(missing.status).toBe(400);
  });

  it('answers malformed JSON, wrong content types and oversized bodies like WSO2', async () => {
    const malformed = await idp.scim('POST', '/Users', { body: '{"userName": ' });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({
      schemas: [ERROR],
      scimType: 'invalidSyntax',
      status: '400',
    });

    const xml = await idp.scim('POST', '/Users', { body: '<user/>', type: 'application/xml' });
    expect(xml.status).toBe(406);
    expect(xml.body.status).toBe('406');

    const huge = await idp.scim('POST', '/Users', {
      body: userBody('huge', { displayName: 'x'.repeat(1_100_000) }),
    });
    expect(huge.status).toBe(413);
    expect(huge.headers.get('content-type')).toBe('application/scim+json');
    expect(huge.body.status).toBe('413');
  });

  it('enforces the password policy on create and PATCH', async () => {
    const weak = await idp.scim('POST', '/Users', { body: userBody('hank', { password: 'abc' }) });
    expect(weak.status).toBe(400);
    expect(weak.body.scimType).toBe('invalidValue');
    const created = await idp.scim('POST', '/Users', { body: userBody('hank') });
    const patch = await idp.scim('PATCH', `/Users/${created.body.id}`, {
      body: { Operations: [{ op: 'replace', path: 'password', value: 'has space' }] },
    });
    expect(patch.status).toBe(400);
    const ok = await idp.scim('PATCH', `/Users/${created.body.id}`, {
      body: { Operations: [{ op: 'replace', value: { password: 'New-pass1' } }] },
    });
    expect(ok.status).toBe(200);
    expect(ok.body).not.toHaveProperty('password');
    expect(await idp.admin.service.users.verifyPassword('hank', 'New-pass1')).toBe(created.body.id);
  });

  it('replaces a user with PUT and deletes it with 204', async () => {
    const created = await idp.scim('POST', '/Users', { body: userBody('gina') });
    const id = created.body.id as string;
    const put = await idp.scim('PUT', `/Users/${id}`, {
      body: { userName: 'gina', name: { givenName: 'G' }, [ENTERPRISE]: { department: 'Ops' } },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      userName: 'gina',
      name: { givenName: 'G' },
      [ENTERPRISE]: { department: 'Ops' },
    });
    expect(put.body).not.toHaveProperty('emails');
    const del = await idp.scim('DELETE', `/Users/${id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await idp.scim('GET', `/Users/${id}`)).status).toBe(404);
  });

  it('paginates lists with startIndex and count, and omits Resources when empty', async () => {
    const page = await idp.scim('GET', '/Users?startIndex=2&count=2');
    expect(page.body).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      startIndex: 2,
      itemsPerPage: 2,
    });
    expect(page.body.totalResults as number).toBeGreaterThanOrEqual(4);
    expect(page.body.Resources).toHaveLength(2);
    const none = await idp.scim('GET', '/Users?filter=userName%20eq%20nobody');
    expect(none.body).toEqual({
      totalResults: 0,
      startIndex: 1,
      itemsPerPage: 0,
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
    });
  });

  it('validates .search bodies', async () => {
    const noSchemas = await idp.scim('POST', '/Users/.search', {
      body: { filter: 'userName eq alice' },
    });
    expect(noSchemas.status).toBe(400);
    expect(noSchemas.body.detail).toBe(
      "Attribute 'schemas' is missing or is not a valid JSON array.",
    );
    const two = await idp.scim('POST', '/Users/.search', { body: { schemas: ['a', 'b'] } });
    expect(two.body).toMatchObject({ detail: 'Schema is invalid', scimType: 'invalidValue' });
  });
});
