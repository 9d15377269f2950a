import { readFileSync } from 'node:fs';
import { ArazzoValidationError } from '@mcp-identity/arazzo';
import {
  batchedStdout,
  ConfigError,
  type ConfigSpec,
  createLogger,
  defineConfig,
  loadConfig,
  normalizeOrigin,
  renderConfigHelp,
} from '@mcp-identity/common';
import { AccountError, AccountStore, type Accounts, generatePassword } from './accounts.js';
import { PostgresAccountStore } from './accounts-postgres.js';
import { DEFAULT_ADMIN_EMAIL, DEFAULT_DATA_DIR, describeInitialAccount } from './builtin-auth.js';
import {
  HEADER_NAME_PATTERN,
  REQUIRED_HEADER_VALUE_ENV,
  type RequiredHeader,
} from './required-header.js';
import { openArazzoMcp, serveArazzoMcpStdio, startArazzoMcpHttp } from './service.js';
import { ToolShapeError } from './tools.js';

const documentFields = defineConfig({
  arazzo: {
    type: 'string',
    description: 'Arazzo document (YAML or JSON): a path or an http(s) URL',
    env: 'ARAZZO_MCP_FILE',
    required: true,
  },
  sourceServer: {
    type: 'string[]',
    flag: 'source-server',
    description:
      'Replace the servers[0] URL of a source description: <name>=<url> (repeatable; the env var takes a comma-separated list)',
    env: 'ARAZZO_MCP_SOURCE_SERVERS',
  },
});

const shapeFields = defineConfig({
  honorRequired: {
    type: 'boolean',
    description: "Only inputs in the workflow's `required` list are required (spec: all are)",
    env: 'ARAZZO_MCP_HONOR_REQUIRED',
    default: false,
  },
  paramDescriptions: {
    type: 'boolean',
    description: 'Send input descriptions with the parameters (spec: no descriptions)',
    env: 'ARAZZO_MCP_PARAM_DESCRIPTIONS',
    default: false,
  },
});

const dataDirField = defineConfig({
  dataDir: {
    type: 'string',
    description: 'Directory of the account database and the token signing key (--auth builtin)',
    env: 'ARAZZO_MCP_DATA_DIR',
    default: DEFAULT_DATA_DIR,
  },
  databaseUrl: {
    type: 'string',
    description:
      'PostgreSQL URL (postgres:// or postgresql://) keeping the accounts and the signing key for every instance, instead of --data-dir (--auth builtin)',
    env: 'ARAZZO_MCP_DATABASE_URL',
    schema: { pattern: '^postgres(ql)?://' },
  },
});

const accountFields = defineConfig({
  ...dataDirField,
  email: { type: 'string', description: 'E-mail address of the account', required: true },
  passwordStdin: {
    type: 'boolean',
    description: 'Read the password from standard input (otherwise one is generated and printed)',
    default: false,
  },
});

const ACCOUNT_ACTIONS = ['add', 'list', 'remove', 'passwd'] as const;
type AccountAction = (typeof ACCOUNT_ACTIONS)[number];

const serveFields = defineConfig({
  ...documentFields,
  transport: {
    type: 'string',
    description: 'http (Streamable HTTP at /mcp, stateless) or stdio',
    env: 'ARAZZO_MCP_TRANSPORT',
    default: 'http',
    schema: { enum: ['http', 'stdio'] },
  },
  host: {
    type: 'string',
    description: 'Interface the HTTP transport binds',
    env: 'ARAZZO_MCP_HOST',
    default: '127.0.0.1',
  },
  port: {
    type: 'integer',
    description: 'Port of the HTTP transport (0 picks a free one)',
    env: 'ARAZZO_MCP_PORT',
    default: 5000,
    schema: { minimum: 0, maximum: 65535 },
  },
  auth: {
    type: 'string',
    description:
      'Authentication of /mcp: none (a gateway in front authenticates callers) or builtin (this server is its own OAuth 2.1 authorization server)',
    env: 'ARAZZO_MCP_AUTH',
    default: 'none',
    schema: { enum: ['none', 'builtin'] },
  },
  ...dataDirField,
  publicUrl: {
    type: 'string',
    description:
      'With --auth builtin: the public base URL, fixing the issuer (default: taken from each request)',
    env: 'ARAZZO_MCP_PUBLIC_URL',
  },
  trustProxy: {
    type: 'boolean',
    description:
      'With --auth builtin: believe X-Forwarded-Proto/-Host/-Prefix/-For (only behind your own proxy)',
    env: 'ARAZZO_MCP_TRUST_PROXY',
    default: false,
  },
  adminEmail: {
    type: 'string',
    description: 'With --auth builtin: e-mail of the account created on first start',
    env: 'ARAZZO_MCP_ADMIN_EMAIL',
    default: DEFAULT_ADMIN_EMAIL,
  },
  stateUrl: {
    type: 'string',
    description:
      'With --auth builtin: Redis URL (redis:// or rediss://) keeping the OAuth state for every instance (default: process memory)',
    env: 'ARAZZO_MCP_STATE_URL',
    schema: { pattern: '^rediss?://' },
  },
  allowedOrigin: {
    type: 'string[]',
    flag: 'allowed-origin',
    description:
      'A browser origin allowed to call /mcp besides loopback ones and the public URL, e.g. https://inspector.example.com (repeatable; the env var takes a comma-separated list); other origins get 403',
    env: 'ARAZZO_MCP_ALLOWED_ORIGINS',
  },
  requireHeader: {
    type: 'string',
    description: `Refuse every /mcp request without this header (401); its value comes from --require-header-file or the env var ${REQUIRED_HEADER_VALUE_ENV}`,
    env: 'ARAZZO_MCP_REQUIRE_HEADER',
    schema: { pattern: HEADER_NAME_PATTERN.source },
  },
  requireHeaderFile: {
    type: 'string',
    description: 'With --require-header: a file whose first line (trimmed) is the header value',
    env: 'ARAZZO_MCP_REQUIRE_HEADER_FILE',
  },
  resultFormat: {
    type: 'string',
    description: 'Tool result text: python (a Python dict repr, as the spec) or json',
    env: 'ARAZZO_MCP_RESULT_FORMAT',
    default: 'python',
    schema: { enum: ['python', 'json'] },
  },
  httpErrorsAsToolErrors: {
    type: 'boolean',
    description: 'Return failed workflows with isError: true (spec: false, "Workflow Success")',
    env: 'ARAZZO_MCP_HTTP_ERRORS_AS_TOOL_ERRORS',
    default: false,
  },
  tokenCache: {
    type: 'boolean',
    description: 'Reuse client-credentials tokens until 30 s before expiry (spec: one per call)',
    env: 'ARAZZO_MCP_TOKEN_CACHE',
    default: false,
  },
  ...shapeFields,
  requestTimeoutMs: {
    type: 'integer',
    flag: 'request-timeout-ms',
    description: 'Timeout of each HTTP request a workflow makes, in milliseconds',
    env: 'ARAZZO_MCP_REQUEST_TIMEOUT_MS',
    default: 30_000,
    schema: { minimum: 1 },
  },
  maxResponseBytes: {
    type: 'integer',
    description: 'Largest API response a workflow accepts, in bytes',
    env: 'ARAZZO_MCP_MAX_RESPONSE_BYTES',
    default: 10 * 1024 * 1024,
    schema: { minimum: 1 },
  },
  logLevel: {
    type: 'string',
    description: 'Log level (logs go to stderr with --transport stdio)',
    env: 'LOG_LEVEL',
    default: 'info',
    schema: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
  },
});

const toolsFields = defineConfig({ ...documentFields, ...shapeFields });

export const HELP = `arazzo-mcp — an MCP server built at run time from an Arazzo workflow file and the
OpenAPI descriptions it references: one tool per workflow.

Usage:
  arazzo-mcp serve    --arazzo <file> [options]   serve the tools (Streamable HTTP or stdio)
  arazzo-mcp validate --arazzo <file> [--source-server <name>=<url> ...]
                                                  check the files; print every problem, exit 1
  arazzo-mcp tools    --arazzo <file> [--honor-required] [--param-descriptions]
                                                  print the tools/list entries and the
                                                  credential env vars each scheme reads (JSON)
  arazzo-mcp accounts add|passwd --email <e-mail> [--password-stdin] [--data-dir <dir>]
  arazzo-mcp accounts remove --email <e-mail> [--data-dir <dir>]
  arazzo-mcp accounts list [--data-dir <dir>]
                                                  manage the accounts of --auth builtin; without
                                                  --password-stdin a password is generated and
                                                  printed once
  arazzo-mcp --help | --version

Options of serve (flags win over environment variables, which win over defaults):
${renderConfigHelp(serveFields)}

Environment variables read by the workflows:
  <PREFIX>_<SCHEME>_CLIENT_ID, <PREFIX>_<SCHEME>_CLIENT_SECRET
      client credentials of an OAuth2 clientCredentials security scheme; PREFIX is the first
      word of the OpenAPI info.title that is not "the", "a", "an", "openapi", "api" or
      "swagger", SCHEME the security scheme name, both upper-cased with every other
      character turned into "_" (title "SCIM 2.0 API", scheme OAuth2 → SCIM_OAUTH2_CLIENT_ID,
      SCIM_OAUTH2_CLIENT_SECRET; "AI Gateway API" → AI_OAUTH2_CLIENT_ID, …)
  <PREFIX>_<SCHEME>_ACCESS_TOKEN   a fixed token used when no client credentials are set
  <PREFIX>_<SCHEME>                the key of an apiKey scheme
  <PREFIX>_<SCHEME>_TOKEN          the token of an http bearer scheme
  <PREFIX>_<SCHEME>_USERNAME, <PREFIX>_<SCHEME>_PASSWORD   an http basic scheme
  <PREFIX>_<SCHEME>_AUTH_VALUE     the Authorization value of any other http scheme
      \`arazzo-mcp tools\` prints the exact names each scheme of a file reads.
  ARAZZO_DISABLE_TLS_VERIFY        exactly 1: do not verify TLS certificates when loading
                                   documents and calling token endpoints and APIs

Exit codes: 0 success, 1 invalid Arazzo/OpenAPI files or start-up failure, 2 bad options.`;

export type Command =
  | { name: 'help' }
  | { name: 'serve'; options: ServeOptions }
  | { name: 'validate' | 'tools'; options: DocumentOptions }
  | { name: 'accounts'; action: AccountAction; options: AccountsOptions };

export interface AccountsOptions {
  dataDir: string;
  databaseUrl?: string;
  /** Absent only for `list`. */
  email?: string;
  passwordStdin: boolean;
}

export interface DocumentOptions {
  arazzo: string;
  sourceServers: Record<string, string>;
  honorRequired: boolean;
  paramDescriptions: boolean;
}

export interface ServeOptions extends DocumentOptions {
  transport: 'http' | 'stdio';
  host: string;
  port: number;
  resultFormat: 'python' | 'json';
  httpErrorsAsToolErrors: boolean;
  tokenCache: boolean;
  requestTimeoutMs: number;
  maxResponseBytes: number;
  logLevel: string;
  auth: 'none' | 'builtin';
  dataDir: string;
  databaseUrl?: string;
  publicUrl?: string;
  trustProxy: boolean;
  adminEmail: string;
  stateUrl?: string;
  /** `--require-header` with its value resolved. */
  requiredHeader?: RequiredHeader;
  allowedOrigins: string[];
}

/** Parses the command line; throws ConfigError (exit 2) for anything it cannot accept. */
export function parseCommandLine(
  argv: readonly string[],
  env: Record<string, string | undefined>,
): Command {
  const [name, ...rest] = argv;
  // Help wins over everything else, even over missing required options.
  if (
    name === undefined ||
    name === 'help' ||
    argv.some((arg) => arg === '--help' || arg === '-h')
  ) {
    return { name: 'help' };
  }
  if (name === 'serve') {
    const { values } = loadConfig(serveFields, { argv: rest, env });
    const options: ServeOptions = {
      ...values,
      sourceServers: parseSourceServers(values.sourceServer ?? []),
      transport: values.transport as ServeOptions['transport'],
      resultFormat: values.resultFormat as ServeOptions['resultFormat'],
      auth: values.auth as ServeOptions['auth'],
      requiredHeader: resolveRequiredHeader(values, env),
      allowedOrigins: parseAllowedOrigins(values.allowedOrigin ?? []),
    };
    checkAuthOptions(options);
    return { name, options };
  }
  if (name === 'accounts') return parseAccountsCommand(rest, env);
  if (name === 'validate' || name === 'tools') {
    const spec: ConfigSpec = name === 'tools' ? toolsFields : documentFields;
    const values = loadConfig(spec, { argv: rest, env }).values as {
      arazzo: string;
      sourceServer?: string[];
    } & Partial<Record<'honorRequired' | 'paramDescriptions', boolean>>;
    return {
      name,
      options: {
        arazzo: values.arazzo,
        sourceServers: parseSourceServers(values.sourceServer ?? []),
        honorRequired: values.honorRequired ?? false,
        paramDescriptions: values.paramDescriptions ?? false,
      },
    };
  }
  throw new ConfigError([
    {
      key: 'command',
      source: 'command line',
      message: `unknown command '${name}' (expected serve, validate or tools; see --help)`,
    },
  ]);
}

function checkAuthOptions(options: ServeOptions): void {
  const problem = (key: string, source: string, message: string) => {
    throw new ConfigError([{ key, source, message }]);
  };
  if (options.auth === 'builtin' && options.transport === 'stdio') {
    problem('auth', 'flag --auth or env var ARAZZO_MCP_AUTH', 'builtin needs --transport http');
  }
  if (options.stateUrl !== undefined && options.auth !== 'builtin') {
    problem('stateUrl', 'flag --state-url or env var ARAZZO_MCP_STATE_URL', 'needs --auth builtin');
  }
  if (options.databaseUrl !== undefined && options.auth !== 'builtin') {
    problem(
      'databaseUrl',
      'flag --database-url or env var ARAZZO_MCP_DATABASE_URL',
      'needs --auth builtin',
    );
  }
  if (options.publicUrl !== undefined && !isHttpUrl(options.publicUrl)) {
    problem(
      'publicUrl',
      'flag --public-url or env var ARAZZO_MCP_PUBLIC_URL',
      `invalid value ${JSON.stringify(options.publicUrl)}: expected an http(s) URL`,
    );
  }
}

const REQUIRE_HEADER_SOURCE = 'flag --require-header or env var ARAZZO_MCP_REQUIRE_HEADER';
const REQUIRE_HEADER_FILE_SOURCE =
  'flag --require-header-file or env var ARAZZO_MCP_REQUIRE_HEADER_FILE';

/**
 * The header name with its expected value: the first line of the file (trimmed) when one is
 * given, else the environment variable. A missing, unreadable or empty source is a
 * configuration error, so the server never starts open by mistake.
 */
function resolveRequiredHeader(
  values: { requireHeader?: string; requireHeaderFile?: string; transport: string },
  env: Record<string, string | undefined>,
): RequiredHeader | undefined {
  const problem = (key: string, source: string, message: string) =>
    new ConfigError([{ key, source, message }]);
  const name = values.requireHeader;
  if (name === undefined) {
    if (values.requireHeaderFile === undefined) return undefined;
    throw problem('requireHeaderFile', REQUIRE_HEADER_FILE_SOURCE, 'needs --require-header');
  }
  if (values.transport === 'stdio') {
    throw problem('requireHeader', REQUIRE_HEADER_SOURCE, 'needs --transport http');
  }
  if (values.requireHeaderFile === undefined) {
    const value = env[REQUIRED_HEADER_VALUE_ENV]?.trim();
    if (!value) {
      throw problem(
        'requireHeader',
        `env var ${REQUIRED_HEADER_VALUE_ENV}`,
        'is not set or empty: give the header value there or in --require-header-file',
      );
    }
    return { name, value };
  }
  let text: string;
  try {
    text = readFileSync(values.requireHeaderFile, 'utf8');
  } catch (error) {
    throw problem(
      'requireHeaderFile',
      REQUIRE_HEADER_FILE_SOURCE,
      `cannot read ${values.requireHeaderFile} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
  const value = text.split(/\r?\n/, 1)[0]?.trim();
  if (!value) {
    throw problem(
      'requireHeaderFile',
      REQUIRE_HEADER_FILE_SOURCE,
      `the first line of ${values.requireHeaderFile} is empty`,
    );
  }
  return { name, value };
}

function parseAccountsCommand(
  argv: readonly string[],
  env: Record<string, string | undefined>,
): Command {
  const [action, ...rest] = argv;
  if (!ACCOUNT_ACTIONS.includes(action as AccountAction)) {
    throw new ConfigError([
      {
        key: 'command',
        source: 'command line',
        message: `unknown accounts action '${action ?? ''}' (expected add, list, remove or passwd)`,
      },
    ]);
  }
  if (action === 'list') {
    const { values } = loadConfig(dataDirField, { argv: [...rest], env });
    return { name: 'accounts', action, options: { ...values, passwordStdin: false } };
  }
  const { values } = loadConfig(accountFields, { argv: [...rest], env });
  return { name: 'accounts', action: action as AccountAction, options: values };
}

function parseAllowedOrigins(entries: readonly string[]): string[] {
  const problems = entries
    .filter((entry) => normalizeOrigin(entry) === undefined)
    .map((entry) => ({
      key: 'allowedOrigin',
      source: 'flag --allowed-origin or env var ARAZZO_MCP_ALLOWED_ORIGINS',
      message: `invalid value ${JSON.stringify(entry)}: expected an http(s) origin such as https://app.example.com`,
    }));
  if (problems.length > 0) throw new ConfigError(problems);
  return [...entries];
}

function parseSourceServers(entries: readonly string[]): Record<string, string> {
  const servers: Record<string, string> = {};
  const problems = entries.flatMap((entry) => {
    const separator = entry.indexOf('=');
    const sourceName = entry.slice(0, separator);
    const url = entry.slice(separator + 1);
    if (separator <= 0 || !isHttpUrl(url)) {
      return [
        {
          key: 'sourceServer',
          source: 'flag --source-server or env var ARAZZO_MCP_SOURCE_SERVERS',
          message: `invalid value ${JSON.stringify(entry)}: expected <name>=<http(s) URL>`,
        },
      ];
    }
    servers[sourceName] = url;
    return [];
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return servers;
}

function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: Record<string, string | undefined>;
  /** The whole of standard input (for `--password-stdin`). */
  readStdin?: () => Promise<string>;
}

/** Runs one command; resolves to the exit code (serve resolves once the server is up). */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const command = parseCommandLine(argv, io.env);
  try {
    switch (command.name) {
      case 'help':
        io.out(HELP);
        return 0;
      case 'validate':
        return await validate(command.options, io);
      case 'tools':
        return await listTools(command.options, io);
      case 'serve':
        return await serve(command.options, io);
      case 'accounts':
        return await manageAccounts(command.action, command.options, io);
    }
  } catch (error) {
    if (error instanceof AccountError) {
      io.err(`error: ${error.message}`);
      return 1;
    }
    const problems = describeLoadFailure(error);
    if (problems === undefined) throw error;
    io.err(problems.join('\n'));
    return 1;
  }
}

async function validate(options: DocumentOptions, io: CliIo): Promise<number> {
  const opened = await openArazzoMcp({ ...options, env: io.env });
  await opened.close();
  const names = opened.catalog.tools.map((tool) => tool.name).join(', ');
  io.out(`OK: ${opened.loaded.location}: ${opened.catalog.tools.length} tools (${names})`);
  return 0;
}

async function listTools(options: DocumentOptions, io: CliIo): Promise<number> {
  const opened = await openArazzoMcp({ ...options, env: io.env });
  await opened.close();
  const { credentials } = opened.loaded;
  io.out(JSON.stringify({ tools: opened.catalog.list(), credentials }, null, 2));
  return 0;
}

async function serve(options: ServeOptions, io: CliIo): Promise<number> {
  const stdio = options.transport === 'stdio';
  const logger = createLogger({
    name: 'arazzo-mcp',
    level: options.logLevel,
    destination: stdio ? process.stderr : batchedStdout(),
    ...(stdio ? { pretty: false } : {}),
  });
  const settings = { ...options, env: io.env, logger };
  if (stdio) {
    await serveArazzoMcpStdio(settings);
    return 0;
  }
  const builtinAuth =
    options.auth === 'builtin'
      ? {
          dataDir: options.dataDir,
          databaseUrl: options.databaseUrl,
          publicUrl: options.publicUrl,
          trustProxy: options.trustProxy,
          initialAccountEmail: options.adminEmail,
          stateUrl: options.stateUrl,
          onInitialAccount: (account: { email: string; password: string }) =>
            io.out(describeInitialAccount(account)),
        }
      : undefined;
  const running = await startArazzoMcpHttp({ ...settings, builtinAuth });
  logger.info({ url: `${running.url}/mcp` }, 'arazzo-mcp listening');
  return 0;
}

async function manageAccounts(
  action: AccountAction,
  options: AccountsOptions,
  io: CliIo,
): Promise<number> {
  const store: Accounts =
    options.databaseUrl === undefined
      ? AccountStore.open(options.dataDir)
      : await PostgresAccountStore.open(options.databaseUrl);
  try {
    const email = options.email ?? '';
    switch (action) {
      case 'list':
        for (const account of await store.list()) {
          io.out(`${account.email}\t${account.id}\t${account.createdAt}`);
        }
        return 0;
      case 'remove':
        io.out(`Removed account ${(await store.remove(email)).email}`);
        return 0;
      case 'add':
      case 'passwd': {
        const { password, generated } = await obtainPassword(options, io);
        const account =
          action === 'add'
            ? await store.add(email, password)
            : await store.setPassword(email, password);
        io.out(
          action === 'add'
            ? `Created account ${account.email} (id ${account.id})`
            : `Changed the password of ${account.email}`,
        );
        if (generated) io.out(`Password (shown only this once): ${password}`);
        return 0;
      }
    }
  } finally {
    await store.close();
  }
}

/** The password from stdin (one trailing line break dropped), or a generated one. */
async function obtainPassword(
  options: AccountsOptions,
  io: CliIo,
): Promise<{ password: string; generated: boolean }> {
  if (!options.passwordStdin) return { password: generatePassword(), generated: true };
  if (io.readStdin === undefined) throw new Error('standard input is not available');
  return { password: (await io.readStdin()).replace(/\r?\n$/, ''), generated: false };
}

/** Every problem of an invalid document or tool set, one per line; undefined for other errors. */
function describeLoadFailure(error: unknown): string[] | undefined {
  if (error instanceof ArazzoValidationError) {
    return [
      `Invalid Arazzo/OpenAPI description (${plural(error.problems.length, 'problem')}):`,
      ...error.problems.map((p) => `  ${p.file}${p.pointer ? `#${p.pointer}` : ''}: ${p.message}`),
    ];
  }
  if (error instanceof ToolShapeError) return [error.message];
  return undefined;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
