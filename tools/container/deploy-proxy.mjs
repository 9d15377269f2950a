// The compose stack's one-shot deploy job (compose.yaml, service deploy-proxy): deploys the
// /scim proxy through gateway-1's management API as mcp-identity up does (created, or replaced
// so its rules follow this version). The definition is kept in PostgreSQL, and every gateway
// instance routes it within a second (LISTEN/NOTIFY). Waits up to 3 minutes for the API, since
// compose tools that ignore health conditions (podman-compose 1.0) start this job early.
import { readFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { deployScimProxy } from '@mcp-identity/cli';

const managementUrl = process.env.MCP_IDENTITY_MANAGEMENT_URL ?? 'http://gateway-1:9090';
const password = (await readFile('/run/secrets/gateway_admin_password', 'utf8'))
  .split('\n')[0]
  .trim();
// The parts of mcp-identity up's layout and secrets the deployment reads.
const layout = {
  gateway: { managementUrl },
  mcp: { mcpUrl: 'http://scim-mcp:5000/mcp', upstreamSecretFile: '/run/secrets/upstream_secret' },
};
const secrets = {
  gatewayAdmin: { username: 'admin', password },
  clientApp: { clientId: 'mcp-client' },
};

const deadline = Date.now() + 180_000;
for (;;) {
  try {
    const outcome = await deployScimProxy(layout, secrets);
    console.log(`deploy-proxy: proxy scim-v1.0 ${outcome} through ${managementUrl}`);
    break;
  } catch (error) {
    if (Date.now() > deadline) throw error;
    console.log(`deploy-proxy: ${error.message}; trying again`);
    await delay(2000);
  }
}
