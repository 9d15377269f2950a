export {
  AppError,
  type Application,
  AppStore,
  type CreateApplicationInput,
  type GrantType,
} from './apps.js';
export {
  applyBootstrap,
  type BootstrapDocument,
  BootstrapError,
  type BootstrapResult,
  checkBootstrap,
  DEFAULT_BOOTSTRAP,
  readBootstrapFile,
} from './bootstrap.js';
export { runIdpCli } from './cli.js';
export { KeyStore } from './keys.js';
export { DEFAULT_OAUTH_LIMITS, type OAuthLimits } from './oauth/routes/index.js';
export {
  type ApiResource,
  ApiResourceError,
  ApiResourceStore,
  validateApiResource,
} from './resources.js';
export { type RouteAccess, requireAccessRules, routeAccess } from './route-access.js';
export { ACCESS_RULES, type AccessRule, findAccessRule, KNOWN_SCOPES } from './scim/scopes.js';
export {
  type IdpAdmin,
  type IdpOptions,
  openIdpData,
  type RunningIdp,
  startIdp,
} from './server.js';
