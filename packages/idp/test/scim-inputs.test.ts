import { seededRandom } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import { startTestIdp, userBody } from './helpers.js';

const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
const BULK = 'urn:ietf:params:scim:api:messages:2.0:BulkRequest';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

describe('SCIM malformed inputs answer 400s, never 5xx', async () => {
  const idp = await startTestIdp();
  const user = (await idp.scim('POST', '/Users', { body: userBody('inputs') })).body.id as string;
  const group = (await idp.scim('POST', '/Groups', { body: { displayName: 'inputs-group' } })).body
    .id as string;

  it('caps operations per PATCH with a SCIM 400, and an at-cap PATCH completes', async () => {
    const over = await idp.scim('PATCH', `/Users/${user}`, {
      body: {
        schemas: [PATCH_OP],
        Operations: Array.from({ length: 10_000 }, (_, i) => ({
          op: 'add',
          path: 'emails',
          value: [{ type: `t${i}`, value: `x${i}@example.com` }],
        })),
      },
    });
    expect(over.status).toBe(400);
    expect(over.body).toEqual({
      schemas: [ERROR],
      scimType: 'invalidValue',
      detail: 'The number of operations in the PATCH request exceeds the maximum: 1000',
      status: '400',
    });

    const atCap = await idp.scim('PATCH', `/Users/${user}`, {
      body: {
        schemas: [PATCH_OP],
        Operations: Array.from({ length: 1000 }, (_, i) => ({
          op: 'add',
          path: 'emails',
          value: [{ type: `t${i % 500}`, value: `x${i}@example.com` }],
        })),
      },
    });
    expect(atCap.status).toBe(200);
    // Typed entries are merged by type: 500 types, each holding its last value.
    const emails = atCap.body.emails as { type?: string; value: string }[];
    expect(emails.filter((e) => e.type?.startsWith('t'))).toHaveLength(500);
    expect(emails.find((e) => e.type === 't0')?.value).toBe('x500@example.com');

    const groupAtCap = await idp.scim('PATCH', `/Groups/${group}`, {
      body: {
        schemas: [PATCH_OP],
        Operations: Array.from({ length: 1000 }, () => ({
          op: 'add',
          path: 'members',
          value: [{ value: user }],
        })),
      },
    });
    expect(groupAtCap.status).toBe(200);
    expect(groupAtCap.body.members).toHaveLength(1);
  });

  it.each([
    ['startIndex=1e308', 'startIndex'],
    ['startIndex=abc', 'startIndex'],
    ['count=NaN', 'count'],
    ['count=1.5', 'count'],
    ['count=1&count=2', 'count'],
    ['startIndex=99999999999999999999', 'startIndex'],
  ])('GET /Users?%s is a 400 invalidValue', async (query, name) => {
    const response = await idp.scim('GET', `/Users?${query}`);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ scimType: 'invalidValue', status: '400' });
    expect(response.body.detail).toContain(name);
  });

  it('reads a negative count as 0 and a startIndex below 1 as 1 (RFC 7644 §3.4.2.4)', async () => {
    const negative = await idp.scim('GET', '/Users?count=-5');
    expect(negative.status).toBe(200);
    expect(negative.body).toMatchObject({ itemsPerPage: 0, Resources: [] });
    expect(negative.body.totalResults).toBeGreaterThan(0);
    const zero = await idp.scim('POST', '/Users/.search', {
      body: { schemas: [SEARCH], startIndex: -3, count: 1 },
    });
    expect(zero.body).toMatchObject({ startIndex: 1, itemsPerPage: 1 });
  });

  it('a fixed-seed fuzz over Users, Groups, Roles, Agents, Bulk and .search never gets a 5xx', async () => {
    const next = seededRandom(Number(process.env.SCIM_FUZZ_SEED ?? 0x5c1a));
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
    const TOKENS = [
      'userName',
      'emails',
      'emails[type eq "work"]',
      'members[value eq x]',
      'meta.created',
      'meta.lastModified',
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department',
      'urn:scim:schemas:extension:custom:User:customerTier',
      'displayName',
      'id',
      '(',
      ')',
      '[',
      ']',
      'and',
      'or',
      'not',
      'eq',
      'ne',
      'co',
      'sw',
      'ew',
      'gt',
      'lt',
      'ge',
      'le',
      'pr',
      '"x"',
      "'y'",
      '"',
      '\\',
      '1e308',
      '2020-01-01T00:00:00Z',
      'null',
      '.',
      ':',
      '💥',
    ];
    const filter = () =>
      Array.from({ length: Math.floor(next() * 12) }, () => pick(TOKENS)).join(
        next() < 0.8 ? ' ' : '',
      );
    const VALUES: unknown[] = [
      null,
      true,
      false,
      0,
      -1,
      1e308,
      'NaN',
      '',
      'x'.repeat(2000),
      {},
      [],
      [{}],
      [{ value: 'nope' }],
      [{ value: user }],
      { value: user },
      { '': 1 },
      'False',
      ['a', 1, null],
      { nested: { deeper: [1, { x: null }] } },
    ];
    const value = (): unknown => (next() < 0.3 ? filter() : pick(VALUES));
    const ATTRIBUTES = [
      'userName',
      'name.givenName',
      'emails',
      'emails.value',
      'members',
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department',
      'meta.created',
      'id',
      'schemas',
      '',
      ',,,',
      'a.b.c.d',
    ];
    const query = () => {
      const params = new URLSearchParams();
      for (const name of ['filter', 'startIndex', 'count', 'attributes', 'excludedAttributes']) {
        if (next() < 0.5) continue;
        const raw =
          name === 'filter'
            ? filter()
            : name.endsWith('ttributes')
              ? pick(ATTRIBUTES)
              : pick(['1', '0', '-1', '1e308', 'abc', '', '2.5', '9007199254740993', '200000']);
        params.append(name, raw);
      }
      const text = params.toString();
      return text ? `?${text}` : '';
    };
    const PATHS = [
      'userName',
      'name.givenName',
      'emails[type eq "work"].value',
      'emails[value co "x" or type pr]',
      'emails[',
      'members',
      `members[value eq "${user}"]`,
      'members[display sw a and not (value pr)]',
      'displayName',
      'externalId',
      'active',
      'users',
      'permissions',
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager',
      'urn:scim:schemas:extension:custom:User:customerTier',
      'urn:nope:x',
      'a.b.c',
      '[]',
    ];
    const operation = () => ({
      op: pick(['add', 'replace', 'remove', 'Add', 'REMOVE', 'move', '', 1]),
      ...(next() < 0.7 ? { path: pick(PATHS) } : {}),
      ...(next() < 0.8 ? { value: next() < 0.3 ? { [pick(PATHS)]: value() } : value() } : {}),
    });
    const resourceBody = () => {
      const body: Record<string, unknown> = {};
      const keys = [
        'userName',
        'displayName',
        'members',
        'emails',
        'name',
        'active',
        'password',
        'externalId',
        'users',
        'permissions',
        'audience',
        'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
        'urn:scim:wso2:agent:schema',
        'schemas',
      ];
      for (const key of keys) if (next() < 0.3) body[key] = value();
      return body;
    };
    const collections = ['/Users', '/Groups', '/v2/Roles', '/Roles', '/Agents'];
    const ids = [user, group, 'nope', '%2e%2e', 'x'.repeat(300)];
    const failures: string[] = [];
    const started = Date.now();
    for (let i = 0; i < 400 && Date.now() - started < 60_000; i++) {
      const collection = pick(collections);
      const kind = Math.floor(next() * 7);
      let method = 'GET';
      let path = `${collection}${query()}`;
      let body: unknown;
      if (kind === 1) {
        method = 'POST';
        path = `${collection}/.search`;
        body = {
          schemas: next() < 0.8 ? [SEARCH] : value(),
          ...(next() < 0.7 ? { filter: next() < 0.8 ? filter() : value() } : {}),
          ...(next() < 0.5 ? { startIndex: value() } : {}),
          ...(next() < 0.5 ? { count: value() } : {}),
          ...(next() < 0.4 ? { attributes: next() < 0.5 ? [pick(ATTRIBUTES)] : value() } : {}),
        };
      } else if (kind === 2) {
        method = 'PATCH';
        path = `${collection}/${pick(ids)}`;
        body = {
          schemas: [PATCH_OP],
          Operations:
            next() < 0.9 ? Array.from({ length: 1 + Math.floor(next() * 4) }, operation) : value(),
        };
      } else if (kind === 3) {
        method = pick(['POST', 'PUT']);
        path = method === 'POST' ? collection : `${collection}/${pick(ids)}`;
        body = next() < 0.9 ? resourceBody() : value();
      } else if (kind === 4) {
        method = 'POST';
        path = '/Bulk';
        body = {
          schemas: [BULK],
          failOnErrors: pick([0, 1, -1, 'x', null]),
          Operations: Array.from({ length: Math.floor(next() * 4) }, () => ({
            method: pick(['POST', 'PUT', 'PATCH', 'DELETE', 'GET', 7]),
            path: pick([
              ...collections.map((c) => `${c}/${pick(ids)}`),
              ...collections,
              '/Nope',
              '',
            ]),
            bulkId: pick(['b1', 'b2', '', null, 3]),
            data:
              next() < 0.5 ? resourceBody() : { schemas: [PATCH_OP], Operations: [operation()] },
          })),
        };
      } else if (kind === 5) {
        method = 'GET';
        path = `${collection}/${pick(ids)}${query()}`;
      } else if (kind === 6) {
        method = pick(['POST', 'PATCH']);
        path = method === 'POST' ? collection : `${collection}/${pick(ids)}`;
        body = pick(['{', '[]', 'null', '"x"', '{"Operations":', '\u0000']);
      }
      const response = await idp.scim(method, path, body === undefined ? {} : { body });
      if (response.status >= 500) {
        failures.push(
          `${method} ${path} ${JSON.stringify(body)?.slice(0, 300)} → ${response.status} ${response.text.slice(0, 200)}`,
        );
      }
    }
    expect(failures).toEqual([]);
  }, 90_000);
});
