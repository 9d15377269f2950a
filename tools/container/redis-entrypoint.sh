#!/bin/sh
# Redis for compose.yaml: no persistence (losing it only signs clients out and restarts
# rate-limit windows, docs/deploy.md), a password from the redis_password secret. The
# configuration goes in on stdin, so the password is in no file and no command line.
set -eu
{
  echo 'bind * -::*'
  echo 'port 6379'
  echo 'save ""'
  echo 'appendonly no'
  echo "requirepass $(head -n 1 /run/secrets/redis_password)"
} | exec redis-server -
