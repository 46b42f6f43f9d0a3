# syntax=docker/dockerfile:1
# The user and token service as a container (SPEC §11). Three stages: TypeScript compiled with the
# dev dependencies; the production dependencies alone; the image, which gets those, dist/ and the
# npm scripts' launcher (scripts/), and runs as the unprivileged `node` user.
#
#   docker build -t user-token-service .
#
# The settings in an env file made once. TOKEN_KEY seals the stored tokens: keep the file (and a
# copy of the key apart from the database's backups); a new key on a later run locks every stored
# token out (the service then refuses to start on that database).
#
#   printf 'TOKEN_KEY=%s\nDATABASE_URL=%s\n' "$(openssl rand -base64 32)" 'postgres://…' > uts.env
#   docker run --env-file uts.env -p 4000:4000 user-token-service
#
# The command-line tools run in the image with the same settings (npm scripts, or node directly):
#
#   docker run --rm --env-file uts.env user-token-service npm run migrate
#   docker run --rm --env-file uts.env user-token-service npm run --silent token -- --user 1 --scope '*'
#   docker run --rm --env-file uts.env user-token-service node dist/src/cli/token.js --user 1 --scope '*'

FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json mikro-orm.config.ts ./
COPY src src
COPY bench bench
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json

FROM node:22-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --omit=dev --no-audit --no-fund --ignore-scripts

FROM node:22-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=4000 \
    DATA_DIR=/app/data \
    SHUTDOWN_DRAIN_MS=5000
WORKDIR /app
COPY --from=deps --chown=node:node /app/node_modules node_modules
COPY --from=build --chown=node:node /app/dist dist
COPY --chown=node:node package.json ./
# npm run migrate, token, rotate-key and start go through scripts/build-if-stale.mjs, which finds
# no sources here and builds nothing.
COPY --chown=node:node scripts scripts
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 4000
# Ready means the database answers and is migrated; Node's fetch, since the slim image has no curl.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 4000) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The young generation's size (--min/--max-semi-space-size) is read by V8 at start only (src/main.ts sets the heap's growth itself).
CMD ["node", "--min-semi-space-size=16", "--max-semi-space-size=16", "dist/src/main.js"]
