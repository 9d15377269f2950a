import { renderConfigHelp } from '@mcp-identity/common';
import { serveFields } from './options.js';

export const HELP = `arazzo-mcp — an MCP server built at run time from an Arazzo workflow file and the
OpenAPI descriptions it references: one tool per workflow.

Usage:
  arazzo-mcp serve    --arazzo <file> [options]   serve the tools (Streamable HTTP or stdio)
  arazzo-mcp validate --arazzo <file> [--source-server <name>=<url> ...]
                                                  check the files; print every problem, exit 1
  arazzo-mcp tools    --arazzo <file> [--honor-required] [--param-descriptions]
                                                  print the tools/list entries and the
                                                  credential env vars each scheme reads (JSON)
  arazzo-mcp accounts add|passwd --email <e-mail> [--password-stdin] [--data-dir <dir>]
  arazzo-mcp accounts remove --email <e-mail> [--data-dir <dir>]
  arazzo-mcp accounts list [--data-dir <dir>]
                                                  manage the accounts of --auth builtin; without
                                                  --password-stdin a password is generated and
                                                  printed once
  arazzo-mcp --help | --version

Options of serve (flags win over environment variables, which win over defaults):
${renderConfigHelp(serveFields)}

Environment variables read by the workflows:
  <PREFIX>_<SCHEME>_CLIENT_ID, <PREFIX>_<SCHEME>_CLIENT_SECRET
      client credentials of an OAuth2 clientCredentials security scheme; PREFIX is the first
      word of the OpenAPI info.title that is not "the", "a", "an", "openapi", "api" or
      "swagger", SCHEME the security scheme name, both upper-cased with every other
      character turned into "_" (title "SCIM 2.0 API", scheme OAuth2 → SCIM_OAUTH2_CLIENT_ID,
      SCIM_OAUTH2_CLIENT_SECRET; "AI Gateway API" → AI_OAUTH2_CLIENT_ID, …)
  <PREFIX>_<SCHEME>_ACCESS_TOKEN   a fixed token used when no client credentials are set
  <PREFIX>_<SCHEME>                the key of an apiKey scheme
  <PREFIX>_<SCHEME>_TOKEN          the token of an http bearer scheme
  <PREFIX>_<SCHEME>_USERNAME, <PREFIX>_<SCHEME>_PASSWORD   an http basic scheme
  <PREFIX>_<SCHEME>_AUTH_VALUE     the Authorization value of any other http scheme
      \`arazzo-mcp tools\` prints the exact names each scheme of a file reads.
  ARAZZO_DISABLE_TLS_VERIFY        exactly 1: do not verify TLS certificates when loading
                                   documents and calling token endpoints and APIs

Exit codes: 0 success, 1 invalid Arazzo/OpenAPI files or start-up failure, 2 bad options.`;
