import { ConfigError } from '@mcp-identity/common';
import { resolveConfig } from '@mcp-identity/gateway';
import { afterEach, describe, expect, it } from 'vitest';

const VARIABLE = 'INTROSPECTION_CONFIG_TEST_SECRET';
const SECRET = 'gateway-introspection-secret-value';

const settings = (keyManager: Record<string, unknown>) => ({
  policy_configurations: { jwtauth_v1: { keyManagers: [keyManager] } },
});
const introspecting = (introspection: Record<string, unknown>) =>
  settings({
    name: 'op',
    issuer: 'https://op.example',
    introspection: {
      endpoint: 'https://op.example/introspect',
      clientId: 'gateway',
      clientSecretRef: `env:${VARIABLE}`,
      ...introspection,
    },
  });

function problemsOf(raw: unknown, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    resolveConfig(raw, { env });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems.map((p) => `${p.key}: ${p.message}`);
  }
  throw new Error('expected a ConfigError');
}

describe('key manager introspection settings', () => {
  afterEach(() => {
    delete process.env[VARIABLE];
    delete process.env.GATEWAY_SECRET_INTROSPECTION;
  });

  it('reads the client secret through its reference; a key manager may have no JWKS', () => {
    process.env[VARIABLE] = SECRET;
    const config = resolveConfig(introspecting({ allTokens: true, cacheTtl: '10s' }), { env: {} });
    expect(config.keyManagers).toEqual([
      {
        name: 'op',
        issuer: 'https://op.example',
        skipTlsVerify: false,
        introspection: {
          endpoint: 'https://op.example/introspect',
          clientId: 'gateway',
          clientSecret: SECRET,
          allTokens: true,
          cacheTtlMs: 10_000,
          skipTlsVerify: false,
        },
      },
    ]);
    const defaults = resolveConfig(introspecting({}), { env: {} }).keyManagers[0]?.introspection;
    expect(defaults).toMatchObject({ allTokens: false, cacheTtlMs: 60_000 });
  });

  it("refuses a secret a proxy's upstream.auth.secretRef could read too", () => {
    process.env.GATEWAY_SECRET_INTROSPECTION = SECRET;
    const problems = problemsOf(
      introspecting({ clientSecretRef: 'env:GATEWAY_SECRET_INTROSPECTION' }),
    );
    expect(problems).toEqual([
      "policy_configurations.jwtauth_v1.keymanagers[0].introspection.clientsecretref: a proxy's " +
        'upstream.auth.secretRef may read it too (secrets.env_prefixes, secrets.directory): use a ' +
        'variable or file outside them',
    ]);
    expect(problems.join('\n')).not.toContain(SECRET);
  });

  it('refuses an unset variable, a secret written in place of a reference, and a bad cacheTtl', () => {
    expect(problemsOf(introspecting({}))).toEqual([
      `policy_configurations.jwtauth_v1.keymanagers[0].introspection.clientsecretref: environment variable ${VARIABLE} is not set`,
    ]);
    expect(problemsOf(introspecting({ clientSecretRef: SECRET }))).toEqual([
      'policy_configurations.jwtauth_v1.keymanagers[0].introspection.clientsecretref: must be env:NAME or file:/absolute/path',
    ]);
    process.env[VARIABLE] = SECRET;
    expect(problemsOf(introspecting({ cacheTtl: 'soon' }))).toEqual([
      'policy_configurations.jwtauth_v1.keymanagers[0].introspection.cachettl: must be a duration such as 30s, 5m or 500ms',
    ]);
  });

  it('refuses a key manager with neither a JWKS nor an introspection endpoint', () => {
    expect(problemsOf(settings({ name: 'op', issuer: 'https://op.example' }))).toEqual([
      'policy_configurations.jwtauth_v1.keymanagers[0]: needs jwks.remote or introspection (or both)',
    ]);
  });
});
