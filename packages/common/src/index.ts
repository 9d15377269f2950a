export { type AppOptions, createApp } from './app.js';
export {
  ConfigError,
  type ConfigProblem,
  type ConfigSource,
  type ConfigSpec,
  type ConfigValues,
  defineConfig,
  type FieldSpec,
  type FieldType,
  type LoadedConfig,
  type LoadOptions,
  loadConfig,
  renderConfigHelp,
} from './config.js';
export {
  gatewayError,
  JSON_RPC,
  type JsonRpcErrorResponse,
  type JsonRpcId,
  jsonRpcError,
  oauthError,
  SCIM_ERROR_SCHEMA,
  type ScimErrorBody,
  scimError,
  scimErrorBody,
} from './errors.js';
export { type HealthOptions, registerHealthRoutes } from './health.js';
export { escapeHtml, setHtmlSecurityHeaders } from './html.js';
export { createLogger, type Logger, type LoggerSettings } from './logger.js';
export { runMain } from './main.js';
export { isSensitiveKey, REDACTED, redactDeep, redactUrl } from './redact.js';
export {
  constantTimeEqual,
  hashSecret,
  randomToken,
  sha256Base64Url,
  verifySecret,
} from './secrets.js';
export { type ListenOptions, type RunningServer, startServer } from './server.js';
export { installSignalHandlers, onShutdown, type SignalOptions } from './shutdown.js';
export {
  certificateAuthorityPath,
  ensureCertificateAuthority,
  ensureSelfSignedCertificate,
  loadTlsFiles,
  selfSignedCertificateFiles,
  type TlsMaterial,
} from './tls.js';
