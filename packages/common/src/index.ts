export {
  type AppOptions,
  type AppState,
  createApp,
  errorReplyBody,
  type FrontHandler,
} from './app.js';
export { AUTHORIZATION_REQUEST_PARAMETERS } from './authorization-request.js';
export { batchedStdout, exitOnceLogged } from './batched-stdout.js';
export { type BearerChallengeParams, bearerChallenge } from './bearer-challenge.js';
export { declaredCharset, isUtf8Body } from './charset.js';
export { clientNetwork, IPV4_NETWORK_PREFIX, IPV6_NETWORK_PREFIX } from './client-address.js';
export {
  type ClientIdMetadata,
  ClientIdMetadataError,
  type ClientIdMetadataOptions,
  ClientIdMetadataResolver,
  clientIdUrlProblem,
  isClientIdMetadataUrl,
} from './client-id-metadata.js';
export { type Clock, epochSeconds, systemClock } from './clock.js';
export {
  ConfigError,
  type ConfigProblem,
  type ConfigSource,
  type ConfigSpec,
  type ConfigValues,
  commandLineFlag,
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
  InternalError,
  InvalidArgumentError,
  JSON_RPC,
  type JsonRpcErrorResponse,
  type JsonRpcId,
  jsonRpcError,
  McpIdentityError,
  NotFoundError,
  OAuthError,
  type OAuthErrorCode,
  oauthError,
  oauthErrorStatus,
  oauthTooManyRequests,
  SCIM_ERROR_SCHEMA,
  type ScimErrorBody,
  StartupError,
  scimErrorBody,
  sendOAuthError,
  UnavailableError,
  UnexpectedResponseError,
} from './errors.js';
export { FairPool, type FairPoolLimits } from './fair-pool.js';
export { type HealthOptions, registerHealthRoutes } from './health.js';
export { escapeHtml, setHtmlSecurityHeaders } from './html.js';
export {
  type BasicCredentials,
  basicCredentials,
  bearerToken,
  clientSecretBasic,
} from './http-auth.js';
export {
  checkJwtClaims,
  type JwtClaimRules,
  type JwtFailure,
  type JwtKeyResolver,
  type JwtVerification,
  type JwtVerificationKey,
  type JwtVerifyOptions,
  verifyJwt,
} from './jwt-verify.js';
export {
  createLogger,
  LOG_FORMATS,
  type LogFormat,
  type Logger,
  type LoggerSettings,
  logFormatSetting,
  recordLineWriter,
} from './logger.js';
export { type MainOptions, runMain } from './main.js';
export { addBounded, boundedMemo, weakMemo } from './memo.js';
export {
  type AnswerCounter,
  CounterSeries,
  CountingCounter,
  CountingHistogram,
  countAnswers,
  counterChildren,
  createMetricsRegistry,
  DURATION_BUCKETS,
  grantTypeLabel,
  HistogramSeries,
  type HttpRequestRecorder,
  httpRequestMetrics,
  labelChildren,
  METRICS_PATH,
  type MetricsRouteOptions,
  type MetricsSource,
  outcomeOfStatus,
  recordHttpRequests,
  registerMetricsRoute,
  routeLabel,
} from './metrics.js';
export {
  CORS_ALLOW_HEADERS,
  CORS_EXPOSE_HEADERS,
  CORS_PREFLIGHT_REFUSED,
  type CorsHeaderTarget,
  type CorsOptions,
  type CorsOutcome,
  createCors,
  createCorsHook,
  createOriginPolicy,
  FIELD_NAME_TOKEN,
  isLoopbackOrigin,
  normalizeOrigin,
  type OriginPolicy,
  type OriginPolicyOptions,
} from './origin.js';
export { packageVersion } from './package-version.js';
export { isS256Challenge, s256Challenge, verifyS256 } from './pkce.js';
export {
  isDatabaseUnavailable,
  migrateSchema,
  type SchemaMigrations,
  SchemaVersionError,
  type SqlPool,
  type SqlSession,
} from './postgres.js';
export { isSensitiveKey, REDACTED, redactDeep, redactUrl } from './redact.js';
export {
  isRedirectUriAllowed,
  MAX_REDIRECT_URI_LENGTH,
  MAX_REDIRECT_URIS,
  redirectUriHost,
  redirectUriProblem,
} from './redirect-uris.js';
export { connectRedis, inRedis, redisReady, StateUnavailableError } from './redis.js';
export {
  type CompiledSchema,
  compileSchema,
  isJsonObject,
  type JsonObject,
  keyPath,
  SchemaError,
  type SchemaIssue,
  stringEnum,
} from './schema.js';
export {
  constantTimeEqual,
  hashSecret,
  randomToken,
  secretMatcher,
  sha256Base64Url,
  storedHashProblem,
  verifySecret,
} from './secrets.js';
export { type ListenOptions, type RunningServer, startServer } from './server.js';
export { installSignalHandlers, onShutdown, type SignalOptions } from './shutdown.js';
export {
  FixedWindowThrottle,
  type FixedWindowThrottleOptions,
  memoryThrottles,
  reserveAll,
  reserveEach,
  reserveForAddress,
  type Throttle,
  type ThrottleDecision,
  type ThrottleFactory,
  type ThrottleSpec,
} from './throttle.js';
export { createRedisThrottles, type RedisThrottles } from './throttle-redis.js';
export { pinTickObjectMaps } from './tick-maps.js';
export {
  certificateAuthorityPath,
  ensureCertificateAuthority,
  ensureSelfSignedCertificate,
  loadTlsFiles,
  selfSignedCertificateFiles,
  type TlsMaterial,
} from './tls.js';
export {
  ACCESS_TOKEN_TYPE,
  TOKEN_EXCHANGE_GRANT,
  type TokenExchangeRequest,
  tokenExchangeForm,
} from './token-exchange.js';
export {
  type Attributes,
  activeContext,
  type Context,
  contextOf,
  endClientSpan,
  endServerSpan,
  httpClientAttributes,
  mcpParentContext,
  remoteContext,
  type Span,
  SpanKind,
  type SpanOptions,
  startSpan,
  startTracing,
  stopTracing,
  type TraceCarrier,
  traceHeaders,
  traceIdOf,
  tracingConfigured,
  tracingEnabled,
  urlWithoutQuery,
  withSpan,
} from './tracing.js';
