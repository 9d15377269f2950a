import { join } from 'node:path';
import { certificateAuthorityPath, selfSignedCertificateFiles } from '@mcp-identity/common';

export interface StackPorts {
  idp: number;
  mcp: number;
  gatewayHttps: number;
  gatewayHttp: number;
  gatewayManagement: number;
  areaA: number;
}

/** The embedded stack's default addresses (the table in ARCHITECTURE.md). */
export const DEFAULT_PORTS: StackPorts = {
  idp: 9443,
  mcp: 5000,
  gatewayHttps: 8443,
  gatewayHttp: 8080,
  gatewayManagement: 9090,
  areaA: 7000,
};

/** The context path of the SCIM proxy the stack deploys: the base of the gateway's MCP URLs. */
export const PROXY_CONTEXT = '/scim';

/** Every address and file of one stack, derived from its data directory and ports. */
export interface StackLayout {
  dataDir: string;
  ports: StackPorts;
  /** The stack's local CA: the one certificate clients trust to reach every HTTPS listener. */
  caFile: string;
  idp: {
    url: string;
    issuer: string;
    jwksUrl: string;
    tokenUrl: string;
    healthUrl: string;
    dataDir: string;
    certFile: string;
    bootstrapFile: string;
  };
  mcp: {
    mcpUrl: string;
    healthUrl: string;
    /** The secret the gateway sends upstream and the SCIM MCP server requires (0600). */
    upstreamSecretFile: string;
    /** `up --delegation`: the gateway's client secret for token exchange at the IdP (0600). */
    exchangeSecretFile: string;
  };
  gateway: {
    publicUrl: string;
    managementUrl: string;
    mcpUrl: string;
    /** The same MCP endpoint on the plain HTTP listener. */
    plainMcpUrl: string;
    prmUrl: string;
    healthUrl: string;
    dataDir: string;
    configFile: string;
    /** The gateway's certificate (issued by the stack's CA). */
    certFile: string;
  };
  areaA: { url: string; mcpUrl: string; healthUrl: string; dataDir: string };
  logDir: string;
}

export function stackLayout(dataDir: string, ports: StackPorts): StackLayout {
  const idpUrl = `https://localhost:${ports.idp}`;
  const gatewayUrl = `https://localhost:${ports.gatewayHttps}`;
  const mcpUrl = `http://127.0.0.1:${ports.mcp}`;
  const areaAUrl = `http://localhost:${ports.areaA}`;
  const idpDir = join(dataDir, 'idp');
  const gatewayDir = join(dataDir, 'gateway');
  return {
    dataDir,
    ports,
    caFile: certificateAuthorityPath(dataDir),
    idp: {
      url: idpUrl,
      issuer: `${idpUrl}/oauth2/token`,
      tokenUrl: `${idpUrl}/oauth2/token`,
      jwksUrl: `${idpUrl}/oauth2/jwks`,
      healthUrl: `${idpUrl}/api/health-check/v1.0/health`,
      dataDir: idpDir,
      certFile: selfSignedCertificateFiles(idpDir).certPath,
      bootstrapFile: join(idpDir, 'bootstrap.yaml'),
    },
    mcp: {
      mcpUrl: `${mcpUrl}/mcp`,
      healthUrl: `${mcpUrl}/health`,
      upstreamSecretFile: join(dataDir, 'scim-mcp', 'gateway-auth.secret'),
      exchangeSecretFile: join(dataDir, 'scim-mcp', 'gateway-exchange.secret'),
    },
    gateway: {
      publicUrl: gatewayUrl,
      managementUrl: `http://localhost:${ports.gatewayManagement}`,
      mcpUrl: `${gatewayUrl}${PROXY_CONTEXT}/mcp`,
      plainMcpUrl: `http://localhost:${ports.gatewayHttp}${PROXY_CONTEXT}/mcp`,
      prmUrl: `${gatewayUrl}${PROXY_CONTEXT}/.well-known/oauth-protected-resource`,
      healthUrl: `http://localhost:${ports.gatewayHttp}/_gateway-health/healthy`,
      dataDir: gatewayDir,
      configFile: join(gatewayDir, 'gateway.toml'),
      certFile: selfSignedCertificateFiles(gatewayDir).certPath,
    },
    areaA: {
      url: areaAUrl,
      mcpUrl: `${areaAUrl}/mcp`,
      healthUrl: `${areaAUrl}/health`,
      dataDir: join(dataDir, 'area-a'),
    },
    logDir: join(dataDir, 'logs'),
  };
}
