export {
  type GatewayConfig,
  type IntrospectionConfig,
  type JwtSettings,
  type KeyManagerConfig,
  loadConfigFile,
  type ManagementUser,
  resolveConfig,
  type TlsTrust,
} from './config.js';
export {
  type McpProxyDefinition,
  type PolicyRef,
  parseDefinitionBody,
  SUPPORTED_SPEC_VERSIONS,
  type ValidationContext,
  type ValidationResult,
  validateDefinition,
} from './control-plane/definition.js';
export { parseMcpBody } from './data-plane/jsonrpc.js';
export { type GatewayOptions, type RunningGateway, startGateway } from './gateway.js';
