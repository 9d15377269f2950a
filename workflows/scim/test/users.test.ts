import { beforeAll, describe, expect, it } from 'vitest';
import {
  CUSTOM,
  ENTERPRISE,
  type ScimHarness,
  SUCCESS_PREFIX,
  seedUser,
  startScimHarness,
} from './support/harness.js';

let h: ScimHarness;
let aliceId: string;

beforeAll(async () => {
  // Token requests are the subject of shape-and-tokens.test.ts; here they would only cost time.
  h = await startScimHarness({ tokenCache: true });
  aliceId = await seedUser(h, 'alice');
  await seedUser(h, 'albert');
  await seedUser(h, 'bob');
});

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const USER_NOT_FOUND = 'User not found in the user store.';

describe('list_users', () => {
  it('returns one page of the users the IdP holds', async () => {
    const result = await h.call('list_users', { startIndex: 1, count: 2 });
    expect(result.isError).toBe(false);
    expect(result.text.startsWith(SUCCESS_PREFIX)).toBe(true);
    const listed = await h.scim('GET', '/Users?startIndex=1&count=100');
    expect(result.outputs.totalResults).toBe(listed.body.totalResults);
    expect(result.outputs.totalResults).toBeGreaterThanOrEqual(3);
    const users = result.outputs.users as { userName: string }[];
    expect(users).toHaveLength(2);
    const allNames = (listed.body.Resources as { userName: string }[]).map((u) => u.userName);
    for (const user of users) expect(allNames).toContain(user.userName);
    expect(result.outputs.error).toBeNull();
    expect(result.outputs.errorStatus).toBeNull();
  });

  it('gives an empty users list past the last page (RFC 7644 §3.4.2.4)', async () => {
    const result = await h.call('list_users', { startIndex: 1000, count: 5 });
    expect(result.outputs.users).toEqual([]);
    expect(result.text).toMatch(
      /^Workflow Success\. Outputs: \{'totalResults': \d+, 'users': \[\], 'error': None, 'errorStatus': None\}$/,
    );
  });

  it('rejects a missing input before running the workflow', async () => {
    h.proxy.reset();
    const result = await h.call('list_users', { startIndex: 1 });
    expect(result.isError).toBe(true);
    expect(result.text).toContain('Invalid arguments for tool list_users');
    expect(h.proxy.requests).toEqual([]);
  });
});

describe('search_users', () => {
  it('finds a user by userName', async () => {
    const result = await h.call('search_users', { filter: 'userName eq alice', count: 10 });
    const users = result.outputs.users as { id: string; userName: string }[];
    expect(users.map((u) => [u.id, u.userName])).toEqual([[aliceId, 'alice']]);
    expect(result.outputs.error).toBeNull();
  });

  it('honours count', async () => {
    const result = await h.call('search_users', { filter: 'userName sw al', count: 1 });
    expect(result.outputs.users).toHaveLength(1);
  });

  it('sets error for an empty filter, with isError false', async () => {
    const result = await h.call('search_users', { filter: '', count: 10 });
    expect(result).toEqual({
      text: "Workflow Success. Outputs: {'users': None, 'error': 'Given filter operator is not supported.', 'errorStatus': '400'}",
      isError: false,
      outputs: {
        users: null,
        error: 'Given filter operator is not supported.',
        errorStatus: '400',
      },
    });
  });
});

describe('get_user', () => {
  it('returns the whole user', async () => {
    const result = await h.call('get_user', { userId: aliceId });
    const stored = await h.scim('GET', `/Users/${aliceId}`);
    expect(result.outputs.user).toEqual(stored.body);
    expect(result.outputs.error).toBeNull();
    expect(result.outputs.errorStatus).toBeNull();
  });

  it('puts the 404 error body inside user for an unknown id', async () => {
    const result = await h.call('get_user', { userId: UNKNOWN_ID });
    expect(result.isError).toBe(false);
    expect(result.text).toBe(
      `Workflow Success. Outputs: {'user': {'schemas': ['urn:ietf:params:scim:api:messages:2.0:Error'], 'detail': '${USER_NOT_FOUND}', 'status': '404'}, 'error': '${USER_NOT_FOUND}', 'errorStatus': '404'}`,
    );
  });
});

describe('create_user', () => {
  it('creates the user with its name and e-mail and returns no password', async () => {
    const result = await h.call('create_user', {
      userName: 'carol',
      password: 'S3cret!pass',
      givenName: 'Carol',
      familyName: 'Jones',
      email: 'carol@example.com',
    });
    const id = result.outputs.id as string;
    expect(result.text).toBe(
      `Workflow Success. Outputs: {'id': '${id}', 'userName': 'carol', 'error': None, 'errorStatus': None}`,
    );
    expect(result.text).not.toContain('S3cret');
    const stored = await h.scim('GET', `/Users/${id}`);
    expect(stored.status).toBe(200);
    expect(stored.body.userName).toBe('carol');
    expect(stored.body.name).toMatchObject({ givenName: 'Carol', familyName: 'Jones' });
    expect(stored.body.emails).toEqual([
      expect.objectContaining({ value: 'carol@example.com', primary: true }),
    ]);
    expect(JSON.stringify(stored.body)).not.toContain('S3cret');
  });

  it('reports a duplicate userName as error 409', async () => {
    const result = await h.call('create_user', {
      userName: 'alice',
      password: 'S3cret!pass',
      givenName: 'A',
      familyName: 'B',
      email: 'alice2@example.com',
    });
    expect(result.isError).toBe(false);
    expect(result.outputs).toMatchObject({ id: null, userName: null, errorStatus: '409' });
    expect(result.outputs.error).toEqual(expect.stringContaining('alice'));
  });
});

describe('update_user_attribute', () => {
  it('replaces one attribute', async () => {
    const id = await seedUser(h, 'dave');
    const result = await h.call('update_user_attribute', {
      userId: id,
      attribute: 'name.givenName',
      value: 'David',
    });
    expect(result.text).toBe(
      `Workflow Success. Outputs: {'id': '${id}', 'userName': 'dave', 'error': None, 'errorStatus': None}`,
    );
    const stored = await h.scim('GET', `/Users/${id}`);
    expect(stored.body.name).toMatchObject({ givenName: 'David', familyName: 'Family' });
  });

  it('sets an enterprise attribute by its full path', async () => {
    const id = await seedUser(h, 'erin');
    await h.call('update_user_attribute', {
      userId: id,
      attribute: `${ENTERPRISE}:department`,
      value: 'Legal',
    });
    const stored = await h.scim('GET', `/Users/${id}`);
    expect(stored.body[ENTERPRISE]).toMatchObject({ department: 'Legal' });
  });

  it('reports an unknown user as error 404', async () => {
    const result = await h.call('update_user_attribute', {
      userId: UNKNOWN_ID,
      attribute: 'title',
      value: 'x',
    });
    expect(result.outputs).toMatchObject({ id: null, userName: null, errorStatus: '404' });
    expect(result.outputs.error).toEqual(expect.any(String));
  });
});

describe('update_user_profile', () => {
  const profile = {
    region: 'EU-West',
    department: 'Sales',
    employeeNumber: 'E-1042',
    costCenter: 'CC-77',
    customerTier: 'gold',
    contractEndDate: '2027-06-30',
  };

  it('sets all six attributes with one PATCH, and every search filter form finds the user', async () => {
    const id = await seedUser(h, 'frank');
    await h.scim('PATCH', `/Users/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [
        { op: 'add', value: { addresses: [{ type: 'home', formatted: 'Home Street 1' }] } },
      ],
    });
    h.proxy.reset();
    const result = await h.call('update_user_profile', { userId: id, ...profile });
    expect(result.text).toBe(
      `Workflow Success. Outputs: {'id': '${id}', 'userName': 'frank', 'error': None, 'errorStatus': None}`,
    );

    const patches = h.proxy.apiRequests('PATCH');
    expect(patches).toHaveLength(1);
    expect(h.proxy.apiRequests()).toHaveLength(1);
    expect(patches[0]?.path).toBe(`/scim2/Users/${id}`);
    const operations = (JSON.parse(patches[0]?.body ?? '{}') as { Operations: unknown[] })
      .Operations;
    expect(operations).toEqual([
      {
        op: 'replace',
        value: {
          addresses: [{ type: 'work', formatted: profile.region }],
          [ENTERPRISE]: {
            department: profile.department,
            employeeNumber: profile.employeeNumber,
            costCenter: profile.costCenter,
          },
          [CUSTOM]: {
            customerTier: profile.customerTier,
            contractEndDate: profile.contractEndDate,
          },
        },
      },
    ]);

    const stored = await h.scim('GET', `/Users/${id}`);
    const addresses = stored.body.addresses as { type: string; formatted: string }[];
    expect(addresses).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'work', formatted: profile.region }),
        expect.objectContaining({ type: 'home', formatted: 'Home Street 1' }),
      ]),
    );
    expect(addresses).toHaveLength(2);
    expect(stored.body[ENTERPRISE]).toMatchObject({
      department: profile.department,
      employeeNumber: profile.employeeNumber,
      costCenter: profile.costCenter,
    });
    expect(stored.body[CUSTOM]).toMatchObject({
      customerTier: profile.customerTier,
      contractEndDate: profile.contractEndDate,
    });

    const filters = [
      `addresses.work eq ${profile.region}`,
      `${ENTERPRISE}:department eq ${profile.department}`,
      `${CUSTOM}:customerTier eq ${profile.customerTier}`,
      'userName eq frank',
      'userName sw fra',
      `userName sw fr and ${CUSTOM}:customerTier eq ${profile.customerTier}`,
    ];
    for (const filter of filters) {
      const found = await h.call('search_users', { filter, count: 10 });
      expect({
        filter,
        users: (found.outputs.users as { id: string }[] | null)?.map((u) => u.id),
      }).toEqual({ filter, users: [id] });
    }
  });

  it('reports an unknown user as error 404 after its single PATCH', async () => {
    h.proxy.reset();
    const result = await h.call('update_user_profile', { userId: UNKNOWN_ID, ...profile });
    expect(result.isError).toBe(false);
    expect(result.outputs).toMatchObject({ id: null, userName: null, errorStatus: '404' });
    expect(result.outputs.error).toEqual(expect.any(String));
    expect(h.proxy.apiRequests('PATCH')).toHaveLength(1);
  });
});

describe('delete_user', () => {
  it('deletes the user: statusCode 204, then the IdP no longer has it', async () => {
    const id = await seedUser(h, 'gina');
    const result = await h.call('delete_user', { userId: id });
    expect(result.text).toBe(
      "Workflow Success. Outputs: {'statusCode': 204, 'error': None, 'errorStatus': None}",
    );
    expect((await h.scim('GET', `/Users/${id}`)).status).toBe(404);
  });

  it('reports an unknown user as error 404', async () => {
    const result = await h.call('delete_user', { userId: UNKNOWN_ID });
    expect(result.isError).toBe(false);
    expect(result.outputs).toMatchObject({ statusCode: 404, errorStatus: '404' });
    expect(result.outputs.error).toEqual(expect.any(String));
  });
});
