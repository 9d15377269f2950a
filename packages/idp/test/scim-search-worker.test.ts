import { describe, expect, it } from 'vitest';
import { startTestIdp } from './helpers.js';

const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

describe('SCIM searches run off the event loop', async () => {
  const idp = await startTestIdp();
  const users = 5000;
  idp.admin.service.users.seed(
    Array.from({ length: users }, (_, i) => ({
      userName: `load${String(i).padStart(5, '0')}`,
      emails: [{ value: `load${i}@example.com`, type: 'work' }],
    })),
  );

  it('an expensive search does not hold up the token endpoint', async () => {
    // 100 substring terms over every user's e-mails: seconds of SQL on one thread.
    const filter = Array.from({ length: 100 }, (_, i) => `emails co "${i}@"`).join(' or ');
    let searchDone = false;
    const search = idp
      .scim('POST', '/Users/.search', { body: { schemas: [SEARCH], filter, count: 5 } })
      .then((response) => {
        searchDone = true;
        return response;
      });
    // Three tokens one after the other: by the second, the search has surely reached the
    // server, so on a blocked event loop these would wait for it.
    for (let i = 0; i < 3; i++) {
      expect(await idp.token(['internal_user_mgt_list'])).toEqual(expect.any(String));
    }
    expect(searchDone).toBe(false);
    const response = await search;
    expect(response.status).toBe(200);
    expect(response.body.totalResults).toBe(users);
    expect(response.body.itemsPerPage).toBe(5);
  });

  it('a value filter is checked in slices and finds the same users as the index', async () => {
    const response = await idp.scim('POST', '/Users/.search', {
      body: {
        schemas: [SEARCH],
        filter: 'emails[type eq "work" and value sw "load49"]',
        count: 200,
      },
    });
    expect(response.status).toBe(200);
    // load49@, load490@ … load499@, load4900@ … load4999@
    expect(response.body.totalResults).toBe(1 + 10 + 100);
    expect(response.body.itemsPerPage).toBe(111);
  });
});
