import {
  batchedStdout,
  createLogger,
  defineConfig,
  LOG_FORMATS,
  loadConfig,
  logFormatSetting,
  NotFoundError,
  renderConfigHelp,
  startTracing,
  TOKEN_EXCHANGE_GRANT,
} from '@mcp-identity/common';
import { BootstrapError, readBootstrapFile } from './bootstrap/apply.js';
import { KNOWN_SCOPES } from './scim/scopes.js';
import { openIdpData, startIdp } from './server.js';
import type { GrantType, TokenExchangePolicy } from './store/apps.js';

const DATA_DIR = {
  type: 'string',
  description: 'Data directory (database, keys, TLS certificate)',
  env: 'IDP_DATA_DIR',
  default: '.data/idp',
} as const;

const SERVE = defineConfig({
  host: { type: 'string', description: 'Interface to bind', env: 'IDP_HOST', default: '127.0.0.1' },
  port: {
    type: 'integer',
    description: 'Port',
    env: 'IDP_PORT',
    default: 9443,
    schema: { minimum: 0, maximum: 65535 },
  },
  dataDir: DATA_DIR,
  bootstrap: { type: 'string', description: 'Bootstrap YAML file', env: 'IDP_BOOTSTRAP' },
  issuer: {
    type: 'string',
    description: 'Token issuer (default <public-url>/oauth2/token)',
    env: 'IDP_ISSUER',
  },
  publicUrl: {
    type: 'string',
    description: 'Base URL clients use (default https://localhost:<port> on loopback)',
    env: 'IDP_PUBLIC_URL',
  },
  allowedOrigins: {
    type: 'string[]',
    description:
      'Origins (besides its own and loopback) whose pages may call discovery, registration and token (CORS), comma-separated',
    env: 'IDP_ALLOWED_ORIGINS',
    default: [],
  },
  http: {
    type: 'boolean',
    description: 'Serve plain HTTP (tests only)',
    env: 'IDP_HTTP',
    default: false,
  },
  clientMetadataAllowPrivateAddresses: {
    type: 'boolean',
    description:
      'Development only: fetch Client ID Metadata Documents from loopback and private addresses too (SSRF protection off)',
    env: 'IDP_CLIENT_METADATA_ALLOW_PRIVATE_ADDRESSES',
    default: false,
  },
  logFormat: {
    type: 'string',
    description: 'pretty or json log lines (default: pretty on a terminal)',
    env: 'LOG_FORMAT',
    schema: { enum: [...LOG_FORMATS] },
  },
});

/** RFC 8693: what an application with the token-exchange grant may exchange (WSO2's model). */
const TOKEN_EXCHANGE_FIELDS = {
  subjectAudiences: {
    type: 'string[]' as const,
    description:
      'Token exchange: audiences (aud) of the subject tokens it may exchange, comma-separated',
    default: [] as string[],
  },
  exchangeResources: {
    type: 'string[]' as const,
    description: 'Token exchange: resources it may exchange them for, comma-separated',
    default: [] as string[],
  },
};

const APPS_CREATE = defineConfig({
  dataDir: DATA_DIR,
  name: { type: 'string', description: 'Application name', required: true },
  clientId: { type: 'string', description: 'Client id (default: generated)' },
  scopes: {
    type: 'string[]',
    description: 'Authorized scopes, comma-separated, or * for all',
    default: [],
  },
  grantTypes: {
    type: 'string[]',
    description: 'Grant types, comma-separated',
    default: ['client_credentials'],
  },
  redirectUris: { type: 'string[]', description: 'Redirect URIs, comma-separated', default: [] },
  ...TOKEN_EXCHANGE_FIELDS,
});

const DATA_ONLY = defineConfig({ dataDir: DATA_DIR });

const APPS_TOKEN_EXCHANGE = defineConfig({ dataDir: DATA_DIR, ...TOKEN_EXCHANGE_FIELDS });

const RESOURCES_ADD = defineConfig({
  dataDir: DATA_DIR,
  identifier: {
    type: 'string',
    description: 'Resource identifier: absolute URL, no fragment (the token audience)',
    required: true,
  },
  name: { type: 'string', description: 'Display name', required: true },
  scopes: {
    type: 'string[]',
    description: 'Scopes the resource offers, comma-separated, or * for all',
    default: [],
  },
  dynamicClients: {
    type: 'boolean',
    description: 'Dynamically registered clients may get it (flows with a signed-in user)',
    default: false,
  },
  applications: {
    type: 'string[]',
    description: 'Names of the applications that may get it, comma-separated',
    default: [],
  },
});

const USAGE = `Usage: mcp-identity-idp <command>   (or: mcp-identity idp <command>)

Commands:
  serve                         Run the identity provider
  validate --bootstrap <file>   Check a bootstrap file as serve would (every problem by key); starts nothing
  apps create --name <name>     Create a machine-to-machine application (secret shown once)
  apps list                     List applications
  apps delete <client-id>       Delete an application
  apps token-exchange <client-id> --subject-audiences <uris> --exchange-resources <uris>
                                Let an application exchange tokens (RFC 8693): adds the grant
  apps rotate-secret <client-id>  Issue a new client secret (shown once)
  keys rotate                   Create a new signing key; old keys stay published until their tokens expire
  resources add --identifier <url> --name <name> --scopes <scopes>
                                Create or replace an API resource (RFC 8707)
  resources list                List API resources
  resources delete <identifier> Delete an API resource

Every command but serve, apps create and resources add needs a data directory that already
holds an IdP, and creates nothing.

Run "mcp-identity-idp <command> --help" for the options of a command, "mcp-identity-idp --version"
for the version.`;

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

/** Runs the `mcp-identity-idp` command line; returns the exit code. */
export async function runIdpCli(argv: readonly string[]): Promise<number> {
  const [command, sub] = argv;
  if (command === 'serve') return serve(argv.slice(1));
  if (command === 'validate') return validate(argv.slice(1));
  if (command === 'apps' && sub) return apps(sub, argv.slice(2));
  if (command === 'resources' && sub) return resources(sub, argv.slice(2));
  if (command === 'keys' && sub === 'rotate') {
    return withData(argv.slice(2), async (data) => {
      print({ kid: await data.keys.rotate() });
      return 0;
    });
  }
  process.stderr.write(`${USAGE}\n`);
  return command === undefined || command === '--help' ? 0 : 2;
}

async function serve(args: readonly string[]): Promise<number> {
  const config = loadConfig(SERVE, { argv: [...args] });
  if (config.help) {
    process.stdout.write(`mcp-identity-idp serve\n\n${renderConfigHelp(SERVE)}\n`);
    return 0;
  }
  const { values } = config;
  await startTracing('mcp-identity-idp');
  const loopback = ['127.0.0.1', 'localhost', '::1'].includes(values.host);
  const scheme = values.http ? 'http' : 'https';
  const publicUrl =
    values.publicUrl ??
    (loopback && values.port !== 0 ? `${scheme}://localhost:${values.port}` : undefined);
  const idp = await startIdp({
    dataDir: values.dataDir,
    host: values.host,
    port: values.port,
    http: values.http,
    handleSignals: true,
    allowedOrigins: values.allowedOrigins,
    clientIdMetadata: { allowPrivateAddresses: values.clientMetadataAllowPrivateAddresses },
    ...(values.bootstrap ? { bootstrap: values.bootstrap } : {}),
    ...(values.logFormat
      ? {
          logger: createLogger({
            name: 'idp',
            destination: batchedStdout(),
            ...logFormatSetting(values.logFormat),
          }),
        }
      : {}),
    ...(values.issuer ? { issuer: values.issuer } : {}),
    ...(publicUrl ? { publicUrl } : {}),
  });
  print({
    url: idp.publicUrl,
    issuer: idp.issuer,
    tokenEndpoint: idp.tokenEndpoint,
    jwksUri: idp.jwksUri,
    createdApplications: idp.bootstrap.createdApplications,
  });
  return 0;
}

const VALIDATE = defineConfig({
  bootstrap: {
    type: 'string',
    description: 'Bootstrap YAML file',
    env: 'IDP_BOOTSTRAP',
    required: true,
  },
});

/** `validate`: the checks `serve` makes of its bootstrap file, exit 2 naming every problem. */
async function validate(args: readonly string[]): Promise<number> {
  const config = loadConfig(VALIDATE, { argv: [...args] });
  if (config.help) {
    process.stdout.write(`mcp-identity-idp validate\n\n${renderConfigHelp(VALIDATE)}\n`);
    return 0;
  }
  const { bootstrap } = config.values;
  try {
    await readBootstrapFile(bootstrap);
  } catch (error) {
    if (!(error instanceof BootstrapError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 2;
  }
  process.stdout.write(`${bootstrap}: valid\n`);
  return 0;
}

async function apps(sub: string, args: readonly string[]): Promise<number> {
  if (sub === 'create') {
    const config = loadConfig(APPS_CREATE, { argv: [...args] });
    if (config.help) {
      process.stdout.write(`mcp-identity-idp apps create\n\n${renderConfigHelp(APPS_CREATE)}\n`);
      return 0;
    }
    const { values } = config;
    const data = openIdpData(values.dataDir);
    try {
      const scopes = values.scopes.includes('*') ? [...KNOWN_SCOPES] : values.scopes;
      const { app, clientSecret } = await data.apps.create({
        name: values.name,
        ...(values.clientId ? { clientId: values.clientId } : {}),
        scopes,
        grantTypes: values.grantTypes as GrantType[],
        redirectUris: values.redirectUris,
        ...(values.grantTypes.includes(TOKEN_EXCHANGE_GRANT)
          ? { tokenExchange: exchangePolicy(values) }
          : {}),
      });
      print({ ...app, clientSecret });
      return 0;
    } finally {
      data.close();
    }
  }
  if (sub === 'list') {
    return withData(args, async (data) => {
      print(data.apps.list());
      return 0;
    });
  }
  if (sub === 'token-exchange') return appTokenExchange(args);
  if (sub === 'delete' || sub === 'rotate-secret') {
    return withData(args, async (data, [clientId]) => {
      if (!clientId) {
        process.stderr.write(`Usage: mcp-identity-idp apps ${sub} <client-id>\n`);
        return 2;
      }
      if (sub === 'delete') {
        if (!data.apps.delete(clientId))
          throw new NotFoundError(`No application with client id ${clientId}`);
        print({ deleted: clientId });
      } else {
        print({ clientId, clientSecret: await data.apps.rotateSecret(clientId) });
      }
      return 0;
    });
  }
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

const exchangePolicy = (values: {
  subjectAudiences: string[];
  exchangeResources: string[];
}): TokenExchangePolicy => ({
  subjectAudiences: values.subjectAudiences,
  resources: values.exchangeResources,
});

/** `apps token-exchange <client-id>`: grants token exchange and replaces what it may exchange. */
async function appTokenExchange(args: readonly string[]): Promise<number> {
  const config = loadConfig(APPS_TOKEN_EXCHANGE, { argv: [...args], allowPositionals: true });
  if (config.help) {
    process.stdout.write(
      `mcp-identity-idp apps token-exchange <client-id>\n\n${renderConfigHelp(APPS_TOKEN_EXCHANGE)}\n`,
    );
    return 0;
  }
  const [clientId] = config.positionals;
  if (!clientId) {
    process.stderr.write('Usage: mcp-identity-idp apps token-exchange <client-id> [options]\n');
    return 2;
  }
  const data = openIdpData(config.values.dataDir, { create: false });
  try {
    const app = data.apps.get(clientId);
    if (!app) throw new NotFoundError(`No application with client id ${clientId}`);
    data.apps.update(clientId, {
      grantTypes: [...new Set<GrantType>([...app.grantTypes, TOKEN_EXCHANGE_GRANT])],
      tokenExchange: exchangePolicy(config.values),
    });
    print(data.apps.get(clientId));
    return 0;
  } finally {
    data.close();
  }
}

async function resources(sub: string, args: readonly string[]): Promise<number> {
  if (sub === 'add') {
    const config = loadConfig(RESOURCES_ADD, { argv: [...args] });
    if (config.help) {
      process.stdout.write(
        `mcp-identity-idp resources add\n\n${renderConfigHelp(RESOURCES_ADD)}\n`,
      );
      return 0;
    }
    const { values } = config;
    const data = openIdpData(values.dataDir);
    try {
      print(
        data.resources.put({
          identifier: values.identifier,
          name: values.name,
          scopes: values.scopes.includes('*') ? [...KNOWN_SCOPES] : values.scopes,
          dynamicClients: values.dynamicClients,
          applications: values.applications,
        }),
      );
      return 0;
    } finally {
      data.close();
    }
  }
  if (sub === 'list') {
    return withData(args, async (data) => {
      print(data.resources.list());
      return 0;
    });
  }
  if (sub === 'delete') {
    return withData(args, async (data, [identifier]) => {
      if (!identifier) {
        process.stderr.write('Usage: mcp-identity-idp resources delete <identifier>\n');
        return 2;
      }
      if (!data.resources.delete(identifier))
        throw new NotFoundError(`No API resource ${identifier}`);
      print({ deleted: identifier });
      return 0;
    });
  }
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

/** Runs `fn` on an existing IdP's data; a directory without one is reported, never created. */
async function withData(
  args: readonly string[],
  fn: (data: ReturnType<typeof openIdpData>, positionals: string[]) => Promise<number>,
): Promise<number> {
  const config = loadConfig(DATA_ONLY, { argv: [...args], allowPositionals: true });
  if (config.help) {
    process.stdout.write(`${renderConfigHelp(DATA_ONLY)}\n`);
    return 0;
  }
  const data = openIdpData(config.values.dataDir, { create: false });
  try {
    return await fn(data, config.positionals);
  } finally {
    data.close();
  }
}
