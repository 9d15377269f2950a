export { type Io, runCommand, scopesForTool, USAGE } from './commands.js';
export {
  type ClientConnection,
  clientConfiguration,
  MCP_CLIENTS,
  type McpClientName,
} from './connect.js';
export { createProgress, type Progress } from './progress.js';
export { callToolThroughGateway, clientCredentialsToken, resultText } from './stack/clients.js';
export { DEFAULT_PORTS, type StackLayout, type StackPorts, stackLayout } from './stack/layout.js';
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
