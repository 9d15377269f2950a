import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** What a benchmark's `gateway serve` is configured with (see the gateway README). */
export interface GatewayConfig {
  dataDir: string;
  httpsPort: number;
  httpPort: number;
  managementPort: number;
  /** The hash of the `admin` user's management password (`hashSecret`). */
  adminPasswordHash: string;
  /** A `jwtauth_v1` key manager, for proxies with an `mcp-auth` policy. */
  keyManager?: { name: string; issuer: string; jwksUri: string };
  /** `cachemaxsize` of the verified-token cache; only with a key manager. */
  tokenCacheEntries?: number;
}

/** Writes `gateway.toml` into `dir` (listeners on 127.0.0.1, audit log at info) and returns its path. */
export function writeGatewayConfig(dir: string, config: GatewayConfig): string {
  const text = JSON.stringify;
  let toml = `data_dir = ${text(config.dataDir)}
log_level = "info"

[listeners]
host = "127.0.0.1"
https_port = ${config.httpsPort}
http_port = ${config.httpPort}
management_host = "127.0.0.1"
management_port = ${config.managementPort}

[[management.users]]
username = "admin"
password_hash = ${text(config.adminPasswordHash)}
roles = ["admin"]
`;
  const { keyManager } = config;
  if (keyManager) {
    toml += `
[policy_configurations.jwtauth_v1]
cachemaxsize = ${config.tokenCacheEntries ?? 10_000}

[[policy_configurations.jwtauth_v1.keymanagers]]
name = ${text(keyManager.name)}
issuer = ${text(keyManager.issuer)}
[policy_configurations.jwtauth_v1.keymanagers.jwks.remote]
uri = ${text(keyManager.jwksUri)}
`;
  }
  const file = join(dir, 'gateway.toml');
  writeFileSync(file, toml);
  return file;
}
