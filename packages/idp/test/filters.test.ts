import { describe, expect, it } from 'vitest';
import { startTestIdp, userBody } from './helpers.js';

const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const CUSTOM = 'urn:scim:schemas:extension:custom:User';
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

describe('SCIM filters (research §1.5)', async () => {
  const idp = await startTestIdp();
  const people = [
    { userName: 'alice', region: 'EU', department: 'Sales', tier: 'gold' },
    { userName: 'alfred', region: 'US', department: 'Sales', tier: 'silver' },
    { userName: 'bob', region: 'EU', department: 'R&D', tier: 'silver' },
    { userName: 'kim', region: 'APAC', department: 'Support', tier: 'gold' },
  ];
  for (const p of people) {
    const response = await idp.scim('POST', '/Users', {
      body: userBody(p.userName, {
        addresses: [{ type: 'work', formatted: p.region }],
        [ENTERPRISE]: { department: p.department },
        [CUSTOM]: { customerTier: p.tier },
      }),
    });
    expect(response.status).toBe(201);
  }
  await idp.scim('POST', '/Groups', { body: { displayName: 'sales-team' } });
  await idp.scim('POST', '/Groups', { body: { displayName: 'support-team' } });
  await idp.scim('POST', '/v2/Roles', { body: { displayName: 'auditor' } });

  const search = async (filter: string) => {
    const response = await idp.scim('POST', '/Users/.search', {
      body: { schemas: [SEARCH], filter, count: 10 },
    });
    return response;
  };
  const names = (body: Record<string, unknown> | undefined) =>
    ((body?.Resources as { userName: string }[] | undefined) ?? []).map((r) => r.userName).sort();

  it.each([
    ['addresses.work eq EU', ['alice', 'bob']],
    ['addresses.work eq "EU"', ['alice', 'bob']],
    [`${ENTERPRISE}:department eq "Sales"`, ['alfred', 'alice']],
    [`${ENTERPRISE}:department eq R&D`, ['bob']],
    [`${CUSTOM}:customerTier eq gold`, ['alice', 'kim']],
    ['userName eq "alice"', ['alice']],
    ['userName eq ALICE', ['alice']],
    ['userName sw al', ['alfred', 'alice']],
    ["userName sw 'al'", ['alfred', 'alice']],
    ['USERNAME SW "AL"', ['alfred', 'alice']],
    ['userName co li', ['alice']],
    ['userName ew ed', ['alfred']],
    ['userName ne bob', ['alfred', 'alice', 'kim']],
    ['userName ge k', ['kim']],
    ['userName le alfred', ['alfred']],
    ['emails eq kim@example.com', ['kim']],
    ['name.givenName eq bob', ['bob']],
    [`userName sw al and ${CUSTOM}:customerTier eq gold`, ['alice']],
    ['urn:ietf:params:scim:schemas:core:2.0:User:userName eq kim', ['kim']],
  ])('users: %s', async (filter, expected) => {
    const response = await search(filter);
    expect(response.status).toBe(200);
    expect(names(response.body)).toEqual(expected);
    expect(response.body.totalResults).toBe(expected.length);
  });

  it('filters through GET query parameters too', async () => {
    const response = await idp.scim('GET', `/Users?filter=${encodeURIComponent('userName sw al')}`);
    expect(names(response.body)).toEqual(['alfred', 'alice']);
  });

  it.each([
    ['', 'InvalidFilter', 'Given filter operator is not supported.'],
    ['userName', 'InvalidFilter', 'Given filter operator is not supported.'],
    ['userName zz alice', 'InvalidFilter', 'Given filter operator is not supported.'],
    [
      'userName gt a',
      'InvalidFilter',
      'Filter operation: gt is not supported for filtering in users endpoint.',
    ],
    [
      'emails pr',
      'InvalidFilter',
      'Filter operation: pr is not supported for filtering in users endpoint.',
    ],
    ['userName eq a or userName eq b', 'InvalidFilter', 'Unsupported Operation: or'],
    ['shoeSize eq 44', 'invalidValue', 'Not a valid attribute name/uri'],
    [`${CUSTOM}:loyalty eq 1`, 'invalidValue', 'Not a valid attribute name/uri'],
    ['emails[type eq "work"]', 'InvalidFilter', 'Given filter operator is not supported.'],
  ])('users reject %j', async (filter, scimType, detail) => {
    const response = await search(filter);
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('application/scim+json');
    expect(response.body).toEqual({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      scimType,
      detail,
      status: '400',
    });
  });

  it('groups: one expression, no ne, no logic', async () => {
    const ok = await idp.scim(
      'GET',
      `/Groups?filter=${encodeURIComponent('displayName sw sales')}`,
    );
    expect((ok.body.Resources as { displayName: string }[]).map((g) => g.displayName)).toEqual([
      'sales-team',
    ]);
    const ne = await idp.scim('GET', `/Groups?filter=${encodeURIComponent('displayName ne x')}`);
    expect(ne.status).toBe(400);
    expect(ne.body.detail).toBe('Filter operation: ne is not supported for groups filtering.');
    const complex = await idp.scim('POST', '/Groups/.search', {
      body: { schemas: [SEARCH], filter: 'displayName eq a and displayName eq b' },
    });
    expect(complex.status).toBe(501);
    expect(complex.body.detail).toBe('Complex filters are not supported yet');
  });

  it('roles: displayName and audience only, and only', async () => {
    const ok = await idp.scim(
      'GET',
      `/v2/Roles?filter=${encodeURIComponent('displayName eq auditor and audience.type eq organization')}`,
    );
    expect((ok.body.Resources as { displayName: string }[]).map((r) => r.displayName)).toEqual([
      'auditor',
    ]);
    const attr = await idp.scim('GET', `/v2/Roles?filter=${encodeURIComponent('name eq x')}`);
    expect(attr.body.detail).toBe('Filtering based on attribute: name is not supported.');
    const or = await idp.scim(
      'GET',
      `/v2/Roles?filter=${encodeURIComponent('displayName eq a or displayName eq b')}`,
    );
    expect(or.body.detail).toBe('Filter operator: or is not supported for role filtering.');
    const op = await idp.scim('GET', `/v2/Roles?filter=${encodeURIComponent('displayName ge a')}`);
    expect(op.body.detail).toBe('Filter operation: ge is not supported for role filtering.');
  });
});
