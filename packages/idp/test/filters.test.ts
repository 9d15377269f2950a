import { describe, expect, it } from 'vitest';
import { startTestIdp, userBody } from './helpers.js';

const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const CUSTOM = 'urn:scim:schemas:extension:custom:User';
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

describe('SCIM filters (RFC 7644 §3.4.2.2, WSO2 rules)', async () => {
  const idp = await startTestIdp();
  const people = [
    { userName: 'alice', region: 'EU', department: 'Sales', tier: 'gold' },
    { userName: 'alfred', region: 'US', department: 'Sales', tier: 'silver' },
    { userName: 'bob', region: 'EU', department: 'R&D', tier: 'silver' },
    { userName: 'kim', region: 'APAC', department: 'Support', tier: 'gold' },
  ];
  for (const p of people) {
    // alice's work address is in one entry, her "work"-looking mail in another.
    const emails =
      p.userName === 'alice'
        ? [
            { value: 'alice@work.example', type: 'work' },
            { value: 'alice@home.example', type: 'home' },
          ]
        : [{ value: `${p.userName}@example.com`, primary: true }];
    const response = await idp.scim('POST', '/Users', {
      body: userBody(p.userName, {
        emails,
        addresses: [{ type: 'work', formatted: p.region }],
        [ENTERPRISE]: { department: p.department },
        [CUSTOM]: { customerTier: p.tier },
      }),
    });
    expect(response.status).toBe(201);
  }
  await idp.scim('POST', '/Groups', {
    body: { displayName: 'sales-team', externalId: 'ext-sales' },
  });
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
    ['userName gt bob', ['kim']],
    ['userName lt alice', ['alfred']],
    ['userName eq alice or userName eq bob', ['alice', 'bob']],
    ['userName eq alice OR userName eq bob', ['alice', 'bob']],
    ['not (userName sw al)', ['bob', 'kim']],
    ['emails pr', ['alfred', 'alice', 'bob', 'kim']],
    ['emails.type pr', ['alice']],
    [`(userName eq alice or userName eq bob) and ${CUSTOM}:customerTier eq silver`, ['bob']],
    [`userName sw al and not (${ENTERPRISE}:department eq Sales)`, []],
    ['emails[type eq "work" and value co "work"]', ['alice']],
    ['emails[type eq "home" and value co "work"]', []],
    ['emails[type eq "work" or value ew "kim@example.com"]', ['alice', 'kim']],
    ['emails[not (type eq "work")]', ['alfred', 'alice', 'bob', 'kim']],
    ['emails[type ne "work"] and userName sw al', ['alfred', 'alice']],
    ['meta.created gt "2000-01-01T00:00:00Z"', ['alfred', 'alice', 'bob', 'kim']],
    ['meta.lastModified lt "2000-01-01"', []],
    ['meta.created le "2999-12-31T00:00:00.000Z" and userName eq kim', ['kim']],
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
    ['emails[type eq "work"', 'InvalidFilter', 'Given filter operator is not supported.'],
    ['userName eq a or', 'InvalidFilter', 'Given filter operator is not supported.'],
    [
      'emails[type eq "work" and emails[value eq x]]',
      'InvalidFilter',
      'Given filter operator is not supported.',
    ],
    ['userName[value eq x]', 'InvalidFilter', 'Given filter operator is not supported.'],
    ['shoeSize eq 44', 'invalidValue', 'Not a valid attribute name/uri'],
    ['emails[shoe eq 44]', 'invalidValue', 'Not a valid attribute name/uri'],
    [`${CUSTOM}:loyalty eq 1`, 'invalidValue', 'Not a valid attribute name/uri'],
    ['meta.created gt yesterday', 'invalidValue', 'Not a valid date and time: yesterday'],
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

  it('rejects a 5,000-term filter with a 400 instead of failing', async () => {
    const filter = Array.from({ length: 5000 }, (_, i) => `userName eq u${i}`).join(' or ');
    const response = await search(filter);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ scimType: 'InvalidFilter', status: '400' });
    expect(response.body.detail).toMatch(/^The filter is too complex/);
    const nested = await search(`${'('.repeat(5000)}userName eq a${')'.repeat(5000)}`);
    expect(nested.status).toBe(400);
  });

  it('groups: ne, and, or, not and member value filters', async () => {
    const groupNames = async (filter: string) => {
      const response = await idp.scim('GET', `/Groups?filter=${encodeURIComponent(filter)}`);
      expect(response.status).toBe(200);
      return ((response.body.Resources as { displayName: string }[] | undefined) ?? [])
        .map((g) => g.displayName)
        .sort();
    };
    expect(await groupNames('displayName sw sales')).toEqual(['sales-team']);
    expect(await groupNames('displayName ne sales-team')).toEqual(['support-team']);
    expect(await groupNames('displayName eq sales-team or displayName eq support-team')).toEqual([
      'sales-team',
      'support-team',
    ]);
    expect(await groupNames('displayName sw s and not (displayName co port)')).toEqual([
      'sales-team',
    ]);
    expect(await groupNames('externalId eq ext-sales')).toEqual(['sales-team']);
    expect(await groupNames('displayName gt sales-team')).toEqual(['support-team']);
    expect(await groupNames('meta.created gt "2000-01-01T00:00:00Z"')).toEqual([
      'sales-team',
      'support-team',
    ]);
    const complex = await idp.scim('POST', '/Groups/.search', {
      body: { schemas: [SEARCH], filter: 'displayName eq a and displayName eq b' },
    });
    expect(complex.status).toBe(200);
    expect(complex.body.totalResults).toBe(0);
  });

  it("groups: Entra's membership check `id eq X and members[value eq Y]`", async () => {
    const alice = (await search('userName eq alice')).body.Resources as { id: string }[];
    const bob = (await search('userName eq bob')).body.Resources as { id: string }[];
    const group = (
      await idp.scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq sales-team')}`)
    ).body.Resources as { id: string }[];
    await idp.scim('PATCH', `/Groups/${group[0]!.id}`, {
      body: { Operations: [{ op: 'add', path: 'members', value: [{ value: alice[0]!.id }] }] },
    });
    const check = (userId: string) =>
      idp.scim(
        'GET',
        `/Groups?excludedAttributes=members&filter=${encodeURIComponent(
          `id eq "${group[0]!.id}" and members[value eq "${userId}"]`,
        )}`,
      );
    const member = await check(alice[0]!.id);
    expect(member.status).toBe(200);
    expect(member.body.totalResults).toBe(1);
    expect(member.body.Resources).toEqual([
      expect.not.objectContaining({ members: expect.anything() }),
    ]);
    const notMember = await check(bob[0]!.id);
    expect(notMember.body.totalResults).toBe(0);
    expect(notMember.body).not.toHaveProperty('Resources');
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
