# syntax=docker/dockerfile:1
# Node 24 (LTS): Node 20 reached its end of life in April 2026, and on 24 the service needs half the CPU
# per call (see README, Benchmark). The code supports Node >= 20.19; the test suite passes on 20 and 24.
# Build stage: compile TypeScript with the dev dependencies.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
# Everything `npm run build` (swc, tools/start/build-if-changed.mjs) reads: the compiler settings, the service, its migrations and the tools
# (admin CLI, upstream simulator) that run from the same image.
COPY tsconfig*.json nest-cli.json ./
COPY src ./src
COPY migrations ./migrations
COPY tools ./tools
RUN npm run build && npm prune --omit=dev

# Runtime stage: only the built service and production dependencies, as a non-root user.
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production PORT=3000
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
# Only used without DATABASE_URL (embedded PostgreSQL, which refuses to run as root).
RUN mkdir -p .data && chown node:node .data
USER node
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health/live').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
# The same image runs the admin CLI (`node dist/tools/admin-cli.js ...`) and the upstream simulator
# (`node dist/tools/upstream-simulator/main.js --port 4010 --host 0.0.0.0`), see docker-compose.yml.
CMD ["node", "--max-semi-space-size=64", "dist/src/main"]
