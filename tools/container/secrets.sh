#!/usr/bin/env bash
# Creates the compose stack's secret files (compose.yaml `secrets:`) that do not exist yet, each
# one random line:
#
#   tools/container/secrets.sh [dir]       (default deploy/secrets; compose.yaml reads
#                                           MCP_IDENTITY_SECRETS, default ./deploy/secrets)
#
# The directory is 0700 and the files 0644: compose bind-mounts each file into the containers,
# whose non-root users must read it, and the directory keeps other local users out. Replace a
# file with your own value before the first start to choose it.
set -euo pipefail
dir="${1:-$(dirname "$0")/../../deploy/secrets}"
install -d -m 0700 "$dir"
random() { head -c "$1" /dev/urandom | base64 | tr '+/' '-_' | tr -d '='; }
for name in postgres_password redis_password gateway_admin_password backend_client_secret \
  upstream_secret reader_password; do
  file="$dir/$name"
  [ -s "$file" ] && continue
  value="$(random 24)"
  # The demo user's password meets the IdP's default policy: 5 to 30 characters, upper and
  # lower case, a digit and a symbol.
  [ "$name" = reader_password ] && value="$(random 15)Aa1!"
  (umask 022 && printf '%s\n' "$value" >"$file")
  echo "created $file"
done
