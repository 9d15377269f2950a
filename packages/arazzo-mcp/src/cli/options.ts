import { defineConfig, LOG_FORMATS } from '@mcp-identity/common';
import { DEFAULT_REFRESH_RACE_WINDOW_SECONDS } from '@mcp-identity/oauth';
import { DEFAULT_ADMIN_EMAIL, DEFAULT_DATA_DIR } from '../auth/builtin-auth.js';
import { HEADER_NAME_PATTERN, REQUIRED_HEADER_VALUE_ENV } from '../http/required-header.js';

// The flags and environment variables of each command. The option types of command-line.ts are
// derived from these specs, and each `enum` below is the list its option's type is drawn from.

export const ACCOUNT_ACTIONS = ['add', 'list', 'remove', 'passwd'] as const;

export const documentFields = defineConfig({
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

export const shapeFields = defineConfig({
  honorRequired: {
    type: 'boolean',
    description:
      "Only inputs in the workflow's `required` list are required (otherwise every input is)",
    env: 'ARAZZO_MCP_HONOR_REQUIRED',
    default: false,
  },
  paramDescriptions: {
    type: 'boolean',
    description: 'Send input descriptions with the parameters (otherwise none are sent)',
    env: 'ARAZZO_MCP_PARAM_DESCRIPTIONS',
    default: false,
  },
});

export const dataDirField = defineConfig({
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

export const accountFields = defineConfig({
  ...dataDirField,
  email: { type: 'string', description: 'E-mail address of the account', required: true },
  passwordStdin: {
    type: 'boolean',
    description: 'Read the password from standard input (otherwise one is generated and printed)',
    default: false,
  },
});

export const serveFields = defineConfig({
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
  refreshRaceWindow: {
    type: 'integer',
    description:
      'With --auth builtin: seconds after a refresh token is rotated during which it counts as sent concurrently (refused, its grant kept) rather than replayed (its grant revoked); 0 keeps only requests that arrived before the rotation',
    env: 'ARAZZO_MCP_REFRESH_RACE_WINDOW',
    default: DEFAULT_REFRESH_RACE_WINDOW_SECONDS,
    schema: { minimum: 0 },
  },
  clientMetadataAllowPrivateAddresses: {
    type: 'boolean',
    description:
      'With --auth builtin, development only: fetch Client ID Metadata Documents from loopback and private addresses too (SSRF protection off)',
    env: 'ARAZZO_MCP_CLIENT_METADATA_ALLOW_PRIVATE_ADDRESSES',
    default: false,
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
  delegatedIssuer: {
    type: 'string',
    description:
      "Delegated calls (off unless set): every /mcp request needs a bearer token from this identity provider issuer for --delegated-audience, and each tool call exchanges it (RFC 8693) at the security scheme's token URL, with its client credentials, instead of asking for a client-credentials token",
    env: 'ARAZZO_MCP_DELEGATED_ISSUER',
  },
  delegatedAudience: {
    type: 'string',
    description:
      "With --delegated-issuer: this server's own URL, the audience the caller's tokens must name",
    env: 'ARAZZO_MCP_DELEGATED_AUDIENCE',
  },
  delegatedJwksUrl: {
    type: 'string',
    description:
      "With --delegated-issuer: the issuer's JWKS URL (default <issuer>/oauth2/jwks, the embedded identity provider's)",
    env: 'ARAZZO_MCP_DELEGATED_JWKS_URL',
  },
  delegatedResource: {
    type: 'string',
    description:
      "With --delegated-issuer: the resource the exchanged tokens are for (default each API's server URL)",
    env: 'ARAZZO_MCP_DELEGATED_RESOURCE',
  },
  resultFormat: {
    type: 'string',
    description:
      'Tool result text: python (a Python dict repr, as the reference server prints) or json',
    env: 'ARAZZO_MCP_RESULT_FORMAT',
    default: 'python',
    schema: { enum: ['python', 'json'] },
  },
  httpErrorsAsToolErrors: {
    type: 'boolean',
    description:
      'Return workflows a failed step stopped (an HTTP 4xx) with isError: true (otherwise isError is false: "Workflow Success" with error set); failures without an answer are tool errors either way',
    env: 'ARAZZO_MCP_HTTP_ERRORS_AS_TOOL_ERRORS',
    default: false,
  },
  tokenCache: {
    type: 'boolean',
    description:
      'Reuse client-credentials tokens until 30 s before expiry (otherwise one token per tool call)',
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
  logFormat: {
    type: 'string',
    description:
      'pretty or json log lines (default: pretty on a terminal; always json with --transport stdio)',
    env: 'LOG_FORMAT',
    schema: { enum: [...LOG_FORMATS] },
  },
});

export const toolsFields = defineConfig({ ...documentFields, ...shapeFields });
