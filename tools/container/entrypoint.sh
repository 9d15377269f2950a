#!/bin/sh
# The mcp-identity image's entrypoint. With MCP_IDENTITY_ENV_FILE set (compose.yaml does, for
# every service), waits for that file, which the stack-init job writes once the stack's
# certificates and configuration are in place, and exports the variables it holds (database
# and Redis URLs with their passwords, backend credentials) before running the command, so no
# secret is in the container's configuration or its command line. Compose tools that do not
# wait for a job to complete (podman-compose 1.0) start the services early; they wait here.
set -eu
if [ -n "${MCP_IDENTITY_ENV_FILE:-}" ]; then
  waited=0
  limit="${MCP_IDENTITY_WAIT_SECONDS:-180}"
  while [ ! -e "$MCP_IDENTITY_ENV_FILE" ]; do
    if [ "$waited" -ge "$limit" ]; then
      echo "mcp-identity: $MCP_IDENTITY_ENV_FILE did not appear within ${limit} s: did the stack-init job fail? (its log says)" >&2
      exit 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  set -a
  . "$MCP_IDENTITY_ENV_FILE"
  set +a
fi
exec "$@"
