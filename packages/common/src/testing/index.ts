export {
  CHROMIUM_PATH,
  type ChromiumOptions,
  chromiumAvailable,
  describeBrowser,
  launchChromium,
} from './browser.js';
export {
  type ClientMetadataServer,
  refusedClientDocuments,
  type ServedDocument,
  startClientMetadataServer,
} from './client-metadata-server.js';
export {
  CONFORMANCE_SERVER_SCENARIOS,
  type ConformanceOptions,
  type ConformanceRun,
  runConformance,
} from './conformance.js';
export {
  type AuthorizationConformanceOptions,
  type ConformanceCheck,
  runAuthorizationConformance,
} from './conformance-authorization.js';
export { findExecutable, postgresBinDir } from './executables.js';
export { type FixedUpstream, startFixedUpstream } from './fixed-upstream.js';
export {
  type InspectorOptions,
  inspectorMissing,
  startInspector,
  type TestInspector,
} from './inspector.js';
export { lineLogger } from './line-logger.js';
export {
  type LoopbackClient,
  type LoopbackResponse,
  loopbackAddresses,
  loopbackClient,
} from './loopback-clients.js';
export {
  type LoadBalancerOptions,
  nginxMissing,
  startLoadBalancer,
  type TestLoadBalancer,
} from './nginx.js';
export { OtlpReceiver, type ReceivedSpan } from './otlp-receiver.js';
export { postgresMissing, startPostgres, type TestPostgres } from './postgres.js';
export { expositionProblems, metricValue } from './prometheus.js';
export { rawHttpStatus } from './raw-http.js';
export { redisMissing, startRedis, type TestRedis } from './redis.js';
export { refreshRaceChain } from './refresh-race.js';
export { describeRequiring } from './requires.js';
export {
  BrowserSignInProvider,
  Sdk2BrowserSignInProvider,
  SignInClientProvider,
} from './sdk-client-provider.js';
export { seededRandom } from './seeded-random.js';
export { startTestServer } from './servers.js';
export {
  freePort,
  type ServiceProcess,
  type ServiceProcessOptions,
  startServiceProcess,
} from './service-process.js';
export { serveStatelessMcp } from './stateless-mcp.js';
export { useTempDir } from './temp.js';
