export {
  type Account,
  type AccountCheck,
  AccountError,
  AccountStore,
  type Accounts,
  generatePassword,
  normalizeEmail,
} from './accounts.js';
export { PostgresAccountStore } from './accounts-postgres.js';
export { type AppLoginOptions, appLoginRoutes, LOGIN_PATH, ME_PATH } from './app-login.js';
export { type ArgumentReader, type ArgumentsResult, createArgumentReader } from './arguments.js';
export {
  type BuiltinAuth,
  type BuiltinAuthOptions,
  DEFAULT_ADMIN_EMAIL,
  DEFAULT_DATA_DIR,
  describeInitialAccount,
  setUpBuiltinAuth,
} from './builtin-auth.js';
export {
  type CatalogLogger,
  createToolCatalog,
  type ToolCatalog,
  type ToolCatalogOptions,
  type WorkflowRunner,
} from './catalog.js';
export {
  type AccountsOptions,
  type CliIo,
  type Command,
  type DocumentOptions,
  HELP,
  parseCommandLine,
  runCli,
  type ServeOptions,
} from './cli.js';
export { cleanDocstring } from './docstring.js';
export {
  type ArazzoMcpAppOptions,
  createArazzoMcpApp,
  HEALTH_PATH,
  type HttpAuth,
  MCP_PATH,
} from './http.js';
export { createMcpServer, DEFAULT_SERVER_INFO, type ServerInfo } from './mcp-server.js';
export { camelToSnake, TOOL_NAME_PATTERN, toParameterName } from './naming.js';
export { pythonDictRepr, pythonRepr, pythonStrRepr } from './python-repr.js';
export {
  HEADER_NAME_PATTERN,
  REQUIRED_HEADER_VALUE_ENV,
  type RequiredHeader,
  requireHeader,
} from './required-header.js';
export { invalidArgumentsResult, type ResultOptions, toCallToolResult } from './results.js';
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
  buildTools,
  type JsonObjectSchema,
  type ParameterType,
  type ToolParameter,
  ToolShapeError,
  type ToolShapeOptions,
  type WorkflowTool,
} from './tools.js';
