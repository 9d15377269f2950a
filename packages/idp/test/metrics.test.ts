import { expositionProblems, metricValue } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import {
  authorizeRequest,
  postLogin,
  registerClient,
  signIn,
  startTestIdp,
  tokenRequest,
  userBody,
} from './helpers.js';

describe('IdP metrics', async () => {
  const idp = await startTestIdp();
  const scrape = async (token: string | undefined) =>
    fetch(`${idp.url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});

  it('are read only with a token holding internal_metrics_view', async () => {
    const anonymous = await scrape(undefined);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(await anonymous.text()).not.toContain('idp_');
    expect((await scrape('not-a-token')).status).toBe(401);
    // Every SCIM scope but the metrics one: still refused.
    const scimAdmin = await idp.token(['internal_user_mgt_list', 'internal_user_mgt_create']);
    const refused = await scrape(scimAdmin);
    expect(refused.status).toBe(403);
    expect(await refused.text()).not.toContain('idp_');
    const allowed = await scrape(await idp.token(['internal_metrics_view']));
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('content-type')).toContain('text/plain');
  });

  it('count token requests, logins and SCIM requests, beside the process metrics', async () => {
    const reader = await idp.token(['internal_metrics_view']);
    const before = await (await scrape(reader)).text();

    const userName = 'metricsuser';
    expect((await idp.scim('POST', '/Users', { body: userBody(userName) })).status).toBe(201);
    expect((await idp.scim('GET', '/Users')).status).toBe(200);
    expect((await idp.scim('GET', '/Users', { token: '' })).status).toBe(401);
    await signIn(idp, { userName, password: 'Passw0rd!' }, 'openid');
    const clientId = await registerClient(idp);
    const failed = await postLogin(idp, authorizeRequest(clientId, 'openid').params, {
      userName,
      password: 'wrong password',
    });
    expect(failed.status).toBe(401);
    const badCode = await tokenRequest(idp, {
      grant_type: 'authorization_code',
      code: 'no-such-code',
      client_id: clientId,
    });
    expect(badCode.status).toBe(400);

    const after = await (await scrape(reader)).text();
    const moved = (series: string) => metricValue(after, series) - metricValue(before, series);
    expect(moved('idp_scim_requests_total{resource="Users",method="POST",status="201"}')).toBe(1);
    expect(moved('idp_scim_requests_total{resource="Users",method="GET",status="200"}')).toBe(1);
    expect(moved('idp_scim_requests_total{resource="Users",method="GET",status="401"}')).toBe(1);
    expect(moved('idp_login_attempts_total{outcome="success"}')).toBe(1);
    expect(moved('idp_login_attempts_total{outcome="failure"}')).toBe(1);
    expect(
      moved('idp_token_requests_total{grant_type="authorization_code",outcome="success"}'),
    ).toBe(1);
    expect(
      moved('idp_token_requests_total{grant_type="authorization_code",outcome="refused"}'),
    ).toBe(1);
    // The metrics token itself was a client-credentials grant, counted before the first scrape.
    expect(
      metricValue(
        after,
        'idp_token_requests_total{grant_type="client_credentials",outcome="success"}',
      ),
    ).toBeGreaterThan(0);
    expect(
      moved('idp_http_request_duration_seconds_count{method="POST",route="/oauth2/token"}'),
    ).toBe(2);
    expect(after).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(after).toContain('# TYPE nodejs_heap_size_used_bytes gauge');
    expect(expositionProblems(after)).toEqual([]);
  });
});
