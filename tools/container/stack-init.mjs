// The compose stack's one-shot init job (compose.yaml, service stack-init): from the compose
// secrets in /run/secrets, writes what the services read and nothing else does:
//   /stack/ca/ca.pem             the stack's CA (every client trusts it: NODE_EXTRA_CA_CERTS)
//   /data/idp/tls/               the IdP's certificate, issued by that CA for localhost and idp
//   /data/idp/bootstrap.yaml     the IdP's applications, API resource, users (mcp-identity up's)
//   /stack/gateway/gateway.toml  the configuration both gateways share
//   /stack/env/<service>.env     the variables each service's entrypoint exports (URLs with
//                                passwords, backend credentials), written last: they are the
//                                services' signal that everything above is in place
// Every file holding a secret is 0600 (the services run as the same user). Safe to run again:
// the CA and certificates are kept, the rest is rewritten from the secrets.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { gatewayRuleScopes, stackBootstrap } from '@mcp-identity/cli';
import {
  certificateAuthorityPath,
  ensureCertificateAuthority,
  ensureSelfSignedCertificate,
  hashSecret,
  randomToken,
} from '@mcp-identity/common';
import { stringify as stringifyToml } from 'smol-toml';
import { stringify as stringifyYaml } from 'yaml';

const STACK = '/stack';
const IDP_DIR = '/data/idp';
/** The proxy's mcp-auth names this key manager (@mcp-identity/cli's scimProxyDefinition). */
const KEY_MANAGER = 'embedded-idp';
/** Fixed client ids: the compose secrets hold their secrets, the ids are no secret. */
const CLIENT_IDS = {
  clientApp: 'mcp-client',
  backendApp: 'scim-backend',
  readOnly: 'scim-readonly',
};

const required = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`stack-init: ${name} is not set`);
  return value;
};
const secret = async (name) =>
  (await readFile(`/run/secrets/${name}`, 'utf8')).split('\n')[0].trim();

/** Writes a file through a temporary name, so no service reads a half-written one. */
async function install(file, content, mode = 0o600) {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const scratch = `${file}.${randomToken(6)}`;
  await writeFile(scratch, content, { mode });
  await rename(scratch, file);
}

/** One `NAME='value'` line per variable, quoted for the entrypoint's POSIX shell. */
const envFile = (variables) =>
  Object.entries(variables)
    .map(([name, value]) => `${name}='${String(value).replaceAll("'", `'\\''`)}'\n`)
    .join('');

const publicUrl = required('MCP_IDENTITY_PUBLIC_URL').replace(/\/$/, '');
const idpPublicUrl = required('MCP_IDENTITY_IDP_PUBLIC_URL').replace(/\/$/, '');
const [postgresPassword, redisPassword, adminPassword, backendSecret, readerPassword] =
  await Promise.all(
    [
      'postgres_password',
      'redis_password',
      'gateway_admin_password',
      'backend_client_secret',
      'reader_password',
    ].map(secret),
  );

await ensureCertificateAuthority(STACK);
await ensureSelfSignedCertificate(IDP_DIR, { caDir: STACK, dnsNames: ['idp'] });
const caFile = certificateAuthorityPath(STACK);

// mcp-identity up's IdP content; the two applications no compose service uses get a fresh
// secret each run (nothing needs to know it).
const bootstrap = stackBootstrap(
  {
    clientApp: { clientId: CLIENT_IDS.clientApp, clientSecret: randomToken(32) },
    backendApp: { clientId: CLIENT_IDS.backendApp, clientSecret: backendSecret },
    readOnlyApp: { clientId: CLIENT_IDS.readOnly, clientSecret: randomToken(32) },
    readOnlyUser: { userName: 'reader', password: readerPassword },
  },
  [
    {
      // The RFC 8707 resource a client connecting to the load balancer asks for.
      identifier: `${publicUrl}/scim/mcp`,
      name: 'SCIM MCP gateway',
      scopes: gatewayRuleScopes(),
      dynamicClients: true,
      applications: [],
    },
  ],
);
await install(join(IDP_DIR, 'bootstrap.yaml'), stringifyYaml(bootstrap));

const gatewayConfig = {
  data_dir: '/data/gateway',
  listeners: {
    host: '0.0.0.0',
    http_port: 8080,
    https_port: 8443,
    // The compose network is private; the management port is published nowhere.
    management_host: '0.0.0.0',
    management_port: 9090,
  },
  database: { reconcile_interval: '5s' },
  // The upstream credential (a compose secret) is the one file a proxy's secretRef may read.
  secrets: { directory: '/run/secrets' },
  management: {
    users: [
      { username: 'admin', password_hash: await hashSecret(adminPassword), roles: ['admin'] },
    ],
  },
  policy_configurations: {
    // The load balancer's URL: the resource every instance names (RFC 9728).
    mcpauth_v1: { gatewayurl: publicUrl },
    jwtauth_v1: {
      keymanagers: [
        {
          name: KEY_MANAGER,
          issuer: `${idpPublicUrl}/oauth2/token`,
          // Fetched over the compose network; the issuer stays the IdP's public URL.
          jwks: {
            remote: {
              uri: 'https://idp:9443/oauth2/jwks',
              skipTlsVerify: false,
              certificatePath: caFile,
            },
          },
        },
      ],
    },
  },
};
await install(join(STACK, 'gateway', 'gateway.toml'), stringifyToml(gatewayConfig));

const password = encodeURIComponent(postgresPassword);
const database = (name) => `postgres://mcp_identity:${password}@postgres:5432/${name}`;
const redis = (index) => `redis://:${encodeURIComponent(redisPassword)}@redis:6379/${index}`;
const backend = {
  SCIM_OAUTH2_CLIENT_ID: CLIENT_IDS.backendApp,
  SCIM_OAUTH2_CLIENT_SECRET: backendSecret,
  AI_OAUTH2_CLIENT_ID: CLIENT_IDS.backendApp,
  AI_OAUTH2_CLIENT_SECRET: backendSecret,
};
const environments = {
  idp: {},
  'scim-mcp': backend,
  gateway: { GATEWAY_DATABASE_URL: database('gateway'), GATEWAY_RATELIMIT_REDIS_URL: redis(1) },
  'area-a': {
    ...backend,
    ARAZZO_MCP_DATABASE_URL: database('area_a'),
    ARAZZO_MCP_STATE_URL: redis(0),
  },
};
for (const [service, variables] of Object.entries(environments)) {
  await install(join(STACK, 'env', `${service}.env`), envFile(variables));
}
console.log(
  `stack-init: CA, IdP certificate, bootstrap, gateway.toml and environments written (public URL ${publicUrl})`,
);
