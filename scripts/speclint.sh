#!/usr/bin/env bash
# Lints openapi.yaml with two independent linters, pinned in package.json:
# Redocly CLI (its recommended ruleset) and Spectral (spectral:oas, in
# .spectral.yaml), and the GraphQL schema with graphql-schema-linter
# (graphql-schema-linter.config.js). Zero findings, warnings included: any
# finding fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
status=0
out=$(REDOCLY_TELEMETRY=off npx --no-install redocly lint openapi.yaml --format=stylish 2>&1) || status=1
findings=$(grep -E '^[[:space:]]+[0-9]+:[0-9]+[[:space:]]+(error|warning|info|hint)' <<<"$out" || true)
if [[ -n "$findings" || $status -ne 0 ]]; then
	echo "speclint: Redocly (recommended) found:" >&2
	echo "${findings:-$out}" >&2
	status=1
else
	echo "speclint: Redocly (recommended): 0 errors, 0 warnings"
fi
if ! out=$(npx --no-install spectral lint openapi.yaml --fail-severity=hint 2>&1); then
	echo "speclint: Spectral (spectral:oas) found:" >&2
	echo "$out" >&2
	status=1
else
	echo "speclint: Spectral (spectral:oas): 0 problems"
fi
if ! out=$(npx --no-install graphql-schema-linter 2>&1); then
	echo "speclint: graphql-schema-linter found:" >&2
	echo "$out" >&2
	status=1
else
	echo "speclint: graphql-schema-linter: 0 errors"
fi
exit $status
