export type { Clock } from './clock.js';
export { systemClock } from './clock.js';
export type { McpAuth, McpGuardOptions, VerificationKey } from './guard.js';
export { createMcpGuard, getMcpAuth } from './guard.js';
export type { IssuerOptions, IssuerResolver } from './issuer.js';
export { createIssuerResolver } from './issuer.js';
export type { SigningAlgorithm, SigningKey, SignTokenRequest } from './keys.js';
export {
  createAccessTokenIssuer,
  generatePrivateJwk,
  generateSigningKey,
  importSigningKey,
  loadOrCreateSigningKey,
  publicJwks,
  signToken,
} from './keys.js';
export type { LoginCredentials, TokenSet } from './login-client.js';
export { loginFormFields, obtainTokenWithLoginForm, submitLoginForm } from './login-client.js';
export type {
  AccessTokenRequest,
  CheckSubjectHook,
  IssueAccessTokenHook,
  LoginFailureReason,
  LoginHook,
  LoginResult,
  OAuthLimits,
  OAuthServerOptions,
  SubjectStatus,
} from './options.js';
export {
  CLIENT_TTL_MS,
  CODE_TTL_MS,
  DEFAULT_LIMITS,
  DEFAULT_REFRESH_RACE_WINDOW_SECONDS,
  SCOPE,
} from './options.js';
export { oauthServer } from './plugin.js';
export { authorizationServerMetadata, protectedResourceMetadata } from './routes/discovery.js';
export type {
  AuthorizationCodeEntry,
  AuthorizationTransaction,
  ClientAdmission,
  CodeRedemption,
  LoginAdmission,
  OAuthStore,
  RefreshPresentation,
  RefreshTokenEntry,
  RefreshTokenUse,
  RegisteredClient,
} from './store.js';
export { MemoryOAuthStore } from './store.js';
export { RedisOAuthStore } from './store-redis.js';
