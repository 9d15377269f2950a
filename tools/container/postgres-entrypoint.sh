#!/bin/sh
# PostgreSQL for compose.yaml: on an empty volume, creates the cluster and the role
# mcp_identity (password: the postgres_password secret) owning one database for the gateways
# and one for Area A, then runs the server in the foreground. Only mcp_identity may connect
# over the network (scram-sha-256); the superuser is reachable by local peer login alone.
set -eu
bin=/usr/lib/postgresql/15/bin
data=/var/lib/postgresql/data
password_file=/run/secrets/postgres_password
if [ ! -s "$data/PG_VERSION" ]; then
  "$bin/initdb" -D "$data" -U postgres --auth-local=peer --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  echo "listen_addresses = '*'" >>"$data/postgresql.conf"
  echo 'host all mcp_identity all scram-sha-256' >>"$data/pg_hba.conf"
  "$bin/pg_ctl" -D "$data" -o "-c listen_addresses=''" -w start >/dev/null
  # The password goes in through a psql variable, never a command line.
  psql -v ON_ERROR_STOP=1 -q -U postgres -d postgres -v password="$(head -n 1 "$password_file")" <<'SQL'
CREATE ROLE mcp_identity LOGIN PASSWORD :'password';
CREATE DATABASE gateway OWNER mcp_identity;
CREATE DATABASE area_a OWNER mcp_identity;
SQL
  "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
  echo 'postgres-entrypoint: cluster created with databases gateway and area_a'
fi
exec "$bin/postgres" -D "$data"
