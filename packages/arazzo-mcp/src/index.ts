export {
  type Account,
  type AccountCheck,
  AccountError,
  AccountStore,
  type Accounts,
  generatePassword,
  normalizeEmail,
} from './auth/accounts.js';
export { PostgresAccountStore } from './auth/accounts-postgres.js';
export { type AppLoginOptions, appLoginRoutes, LOGIN_PATH, ME_PATH } from './auth/app-login.js';
export {
  type BuiltinAuth,
  type BuiltinAuthOptions,
  DEFAULT_ADMIN_EMAIL,
  DEFAULT_DATA_DIR,
  describeInitialAccount,
  setUpBuiltinAuth,
} from './auth/builtin-auth.js';
export {
  type AccountAction,
  type AccountsOptions,
  type Command,
  type DocumentOptions,
  parseCommandLine,
  type ServeOptions,
} from './cli/command-line.js';
export { HELP } from './cli/help.js';
export type { CliIo } from './cli/io.js';
export { runCli } from './cli/run.js';
export {
  type ArazzoMcpAppOptions,
  createArazzoMcpApp,
  HEALTH_PATH,
  type HttpAuth,
  MCP_PATH,
} from './http/app.js';
export { type DelegatedAuthOptions, delegatedAuthGuard } from './http/delegated-auth.js';
export {
  HEADER_NAME_PATTERN,
  REQUIRED_HEADER_VALUE_ENV,
  type RequiredHeader,
  requireHeader,
} from './http/required-header.js';
export {
  createMcpServer,
  DEFAULT_SERVER_INFO,
  MODERN_PROTOCOL_VERSION,
  mcpServerFactory,
  SERVED_PROTOCOL_VERSIONS,
  type ServerInfo,
} from './mcp/server.js';
export { METRICS_TOKEN_ENV } from './metrics.js';
export {
  AREA_A_PORT,
  type ArazzoMcpHttpOptions,
  type ArazzoMcpOptions,
  type OpenedArazzoMcp,
  openArazzoMcp,
  serveArazzoMcpStdio,
  startArazzoMcpHttp,
  tlsVerifyFromEnv,
} from './service.js';
export {
  type ArgumentReader,
  type ArgumentsResult,
  createArgumentReader,
} from './tools/arguments.js';
export {
  type CatalogLogger,
  createToolCatalog,
  type Delegation,
  type ToolCatalog,
  type ToolCatalogOptions,
  type WorkflowRunner,
} from './tools/catalog.js';
export { cleanDocstring } from './tools/docstring.js';
export { camelToSnake, TOOL_NAME_PATTERN, toParameterName } from './tools/naming.js';
export { pythonDictRepr, pythonRepr, pythonStrRepr } from './tools/python-repr.js';
export { invalidArgumentsResult, type ResultOptions, toCallToolResult } from './tools/results.js';
export {
  buildTools,
  type JsonObjectSchema,
  type ParameterType,
  type ToolParameter,
  ToolShapeError,
  type ToolShapeOptions,
  type WorkflowTool,
} from './tools/shape.js';
