export { type Io, runCommand, scopesForTool, USAGE } from './commands.js';
export {
  type ClientConnection,
  clientConfiguration,
  MCP_CLIENTS,
  type McpClientName,
} from './connect.js';
export { createProgress, type Progress } from './progress.js';
export { callToolThroughGateway, clientCredentialsToken, resultText } from './stack/clients.js';
export { gatewayRuleScopes } from './stack/gateway-rules.js';
// The stack's contents, for deployments that wire its services themselves (tools/container).
export { deployScimProxy } from './stack/gateway-setup.js';
export { DEFAULT_PORTS, type StackLayout, type StackPorts, stackLayout } from './stack/layout.js';
export { stackBootstrap } from './stack/sample-data.js';
export { type RunningStack, type StackOptions, startStack } from './stack/start.js';
export { readRunningStack, type StackState } from './stack/state.js';
export { userAccessToken } from './stack/user-login.js';
export {
  type RestartPolicy,
  type RunningService,
  type ServiceSpec,
  type ServiceState,
  type ServiceStatus,
  Supervisor,
  type SupervisorOptions,
} from './supervisor.js';
