import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describeRequiring, SignInClientProvider, useTempDir } from '@mcp-identity/common/testing';
import { loginFormFields } from '@mcp-identity/oauth';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fetchTrustingCa } from '../../../packages/cli/test/support/sdk-login.js';
import { waitFor } from '../../../packages/cli/test/support/wait.js';
import { containerToolsMissing, podmanEnvironment, ROOT, run, timed } from './podman.js';

// The compose stack (compose.yaml) from the Dockerfile's images, with podman and
// podman-compose, and the official MCP SDK client given nothing but the load balancer's URL.
// `npm run test:container` (not in `npm test`: it builds images, minutes on a cold cache).
const BASE_IMAGE = 'localhost/mcp-identity-base:bookworm';
const IMAGES = { app: 'localhost/mcp-identity:latest' } as const;
const SERVICE_IMAGES = ['postgres', 'redis', 'nginx'] as const;
/** The proxy's MCP path and its protected resource metadata (RFC 9728) below a gateway's URL. */
const MCP_PATH = '/scim/mcp';
const PRM_PATH = '/scim/.well-known/oauth-protected-resource';
const REDIRECT_URL = 'http://127.0.0.1/callback';

/** Free loopback ports, all open at once so none is handed out twice. */
async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  await Promise.all(
    servers.map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))),
  );
  const ports = servers.map((server) => (server.address() as { port: number }).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

/**
 * The user signs in at the IdP's own login form over HTTP, as a browser submits it: the form
 * fetched, its hidden fields and the CSRF cookie sent back with the credentials; the redirect
 * to the client (a loopback URI nothing listens on, RFC 8252 §7.3) carries the code.
 */
class FormSignInProvider extends SignInClientProvider {
  constructor(
    private readonly fetchTrusting: FetchLike,
    private readonly user: { username: string; password: string },
  ) {
    super('mcp-identity container test', REDIRECT_URL);
  }

  protected async signInAt(url: URL): Promise<URL> {
    const form = await this.fetchTrusting(url);
    const page = await form.text();
    if (form.status !== 200) throw new Error(`the login page answered ${form.status}`);
    const cookie = form.headers
      .getSetCookie()
      .map((line) => line.split(';')[0])
      .join('; ');
    const endpoint = new URL(url);
    endpoint.search = '';
    const login = await this.fetchTrusting(endpoint, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: new URLSearchParams({ ...loginFormFields(page), ...this.user }).toString(),
    });
    await login.body?.cancel();
    const location = login.headers.get('location');
    if (location === null) throw new Error(`the login answered ${login.status} without a redirect`);
    return new URL(location);
  }
}

describeRequiring('the compose stack in containers', containerToolsMissing(), () => {
  const tempDir = useTempDir('mcp-identity-container-');
  const project = `mcpid${randomBytes(3).toString('hex')}`;
  let env: NodeJS.ProcessEnv;
  let lbUrl: string;
  let caFile: string;
  let secretsDir: string;
  const compose = (...args: string[]) =>
    run('podman-compose', ['-p', project, '-f', join(ROOT, 'compose.yaml'), ...args], env);
  const podman = (...args: string[]) => run('podman', args, env);
  /** The container podman-compose made for a service. */
  const container = async (service: string) =>
    (
      await podman(
        'ps',
        '-a',
        '--filter',
        `label=io.podman.compose.project=${project}`,
        '--filter',
        `label=com.docker.compose.service=${service}`,
        '--format',
        '{{.Names}}',
      )
    ).trim();

  beforeAll(async () => {
    const dir = tempDir();
    env = podmanEnvironment(dir);
    if ((await podman('images', '-q', BASE_IMAGE)).trim() === '') {
      await timed(`building the base image ${BASE_IMAGE} (debootstrap)`, () =>
        run(join(ROOT, 'tools/container/base-image.sh'), [BASE_IMAGE], env),
      );
    } else {
      process.stderr.write(`[container] base image ${BASE_IMAGE} exists: reused\n`);
    }
    await timed(`building the image ${IMAGES.app}`, () =>
      podman(
        'build',
        '--format',
        'docker',
        '--secret',
        'id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt',
        '--target',
        'app',
        '-t',
        IMAGES.app,
        ROOT,
      ),
    );
    for (const target of SERVICE_IMAGES) {
      await timed(`building the ${target} image`, () =>
        podman(
          'build',
          '--format',
          'docker',
          '--target',
          target,
          '-t',
          `localhost/mcp-identity-${target}:latest`,
          ROOT,
        ),
      );
    }
    const size = (await podman('image', 'inspect', '--format', '{{.Size}}', IMAGES.app)).trim();
    process.stderr.write(`[container] ${IMAGES.app}: ${(Number(size) / 1e6).toFixed(0)} MB\n`);

    secretsDir = join(dir, 'secrets');
    await run(join(ROOT, 'tools/container/secrets.sh'), [secretsDir], env);
    const [lb, idp, areaA] = (await freePorts(3)) as [number, number, number];
    lbUrl = `http://localhost:${lb}`;
    env = {
      ...env,
      MCP_IDENTITY_SECRETS: secretsDir,
      MCP_IDENTITY_PORT: String(lb),
      MCP_IDENTITY_IDP_PORT: String(idp),
      MCP_IDENTITY_AREA_A_PORT: String(areaA),
    };
    await timed('starting the compose stack', async () => {
      await compose('up', '-d', '--no-build');
      // The deploy job exits 0 once the proxy is in PostgreSQL (podman wait: its exit code).
      const deployed = (await podman('wait', await container('deploy-proxy'))).trim();
      expect(deployed, await podman('logs', await container('deploy-proxy'))).toBe('0');
      await waitFor(
        async () => (await fetch(`${lbUrl}${PRM_PATH}`).catch(() => undefined))?.ok === true,
        'the proxy through the load balancer',
        120_000,
      );
    });
    caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, await podman('exec', await container('idp'), 'cat', '/stack/ca/ca.pem'));
  }, 1_800_000);

  afterAll(async () => {
    if (!env) return;
    await timed('tearing the stack down', async () => {
      await compose('down', '-v').catch((error) => process.stderr.write(`${error}\n`));
      // Whatever the compose tool left: containers, volumes, the project's network.
      const label = `label=io.podman.compose.project=${project}`;
      const left = (await podman('ps', '-aq', '--filter', label)).split('\n').filter(Boolean);
      if (left.length > 0) await podman('rm', '-f', ...left);
      const volumes = (await podman('volume', 'ls', '-q', '--filter', label))
        .split('\n')
        .filter(Boolean);
      if (volumes.length > 0) await podman('volume', 'rm', '-f', ...volumes);
      const networks = (await podman('network', 'ls', '-q', '--filter', label))
        .split('\n')
        .filter(Boolean);
      if (networks.length > 0) await podman('network', 'rm', '-f', ...networks);
    });
  }, 300_000);

  it('the official MCP SDK client, given only the load balancer URL, discovers OAuth, signs the user in at the IdP login form, lists its tools and searches', async () => {
    const mcpUrl = new URL(`${lbUrl}${MCP_PATH}`);
    const fetchTrusting = fetchTrustingCa(caFile);
    const provider = new FormSignInProvider(fetchTrusting, {
      username: 'reader',
      password: readFileSync(join(secretsDir, 'reader_password'), 'utf8').trim(),
    });
    const first = new Client({ name: 'container-e2e', version: '1.0.0' });
    await expect(
      first.connect(
        new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: fetchTrusting }),
      ),
    ).rejects.toBeInstanceOf(UnauthorizedError);
    // Sent to the IdP's published URL with the load balancer's resource (RFC 8707).
    const authorization = provider.authorizationUrls[0];
    expect(authorization?.origin).toBe(`https://localhost:${env.MCP_IDENTITY_IDP_PORT}`);
    expect(authorization?.searchParams.get('resource')).toBe(mcpUrl.href);
    expect(provider.code).toEqual(expect.any(String));

    const transport = new StreamableHTTPClientTransport(mcpUrl, {
      authProvider: provider,
      fetch: fetchTrusting,
    });
    await transport.finishAuth(provider.code ?? '');
    const client = new Client({ name: 'container-e2e', version: '1.0.0' });
    await client.connect(transport);
    try {
      // The read-only user's list: what its role's scopes may call (the proxy filters lists).
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual([
        'get_user',
        'list_users',
        'search_users',
      ]);
      const found = await client.callTool({
        name: 'search_users',
        arguments: { filter: 'userName eq alice', count: 1 },
      });
      expect(found.isError).toBe(false);
      const { users } = found.structuredContent as { users: Array<{ userName: string }> };
      expect(users.map((user) => user.userName)).toEqual(['alice']);
    } finally {
      await client.close();
    }
  }, 120_000);

  it.each(['gateway-1', 'gateway-2'])(
    '%s, asked directly on its own listener, names the load balancer URL as the resource',
    async (service) => {
      // The instance's own listener by its name on the compose network, as the load balancer
      // addresses it (a loopback Host would name the listener's loopback URL instead).
      const probe = `const [prm, mcp] = await Promise.all([fetch(process.argv[1]), fetch(process.argv[2], { method: 'POST' })]);
      console.log(JSON.stringify({ prm: await prm.json(), challenge: mcp.headers.get('www-authenticate') }));`;
      const answer = JSON.parse(
        await podman(
          'exec',
          await container(service),
          'node',
          '--input-type=module',
          '-e',
          probe,
          `http://${service}:8080${PRM_PATH}`,
          `http://${service}:8080${MCP_PATH}`,
        ),
      ) as { prm: { resource: string }; challenge: string };
      expect(answer.prm.resource).toBe(`${lbUrl}${MCP_PATH}`);
      expect(answer.challenge).toContain(`resource_metadata="${lbUrl}/`);
    },
    60_000,
  );

  it('the load balancer runs the repository nginx configuration, which passes nginx -t', async () => {
    const lb = await container('lb');
    await expect(podman('exec', lb, 'nginx', '-t')).resolves.toBeDefined();
  }, 60_000);
});
