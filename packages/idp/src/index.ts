export { type RouteAccess, requireAccessRules, routeAccess } from './auth/route-access.js';
export {
  applyBootstrap,
  type BootstrapDocument,
  BootstrapError,
  type BootstrapResult,
  checkBootstrap,
  DEFAULT_BOOTSTRAP,
  readBootstrapFile,
} from './bootstrap/apply.js';
export { runIdpCli } from './cli.js';
export { DEFAULT_OAUTH_LIMITS, type OAuthLimits } from './oauth/routes/index.js';
export { ACCESS_RULES, type AccessRule, findAccessRule, KNOWN_SCOPES } from './scim/scopes.js';
export {
  type IdpAdmin,
  type IdpOptions,
  openIdpData,
  type RunningIdp,
  startIdp,
} from './server.js';
export {
  AppError,
  type Application,
  AppStore,
  type CreateApplicationInput,
  type GrantType,
  type TokenExchangePolicy,
} from './store/apps.js';
export { KeyStore } from './store/keys.js';
export {
  type ApiResource,
  ApiResourceError,
  ApiResourceStore,
  validateApiResource,
} from './store/resources.js';
