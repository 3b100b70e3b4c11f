package typescript_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/testkit"
)

// driveSummary is the last line of a passing drive.
var driveSummary = regexp.MustCompile(`(?m)^drive: [1-9][0-9]* passed, 0 failed$`)

// TestHeyAPIClient is the contract checked by a generator the project does not
// otherwise use: @hey-api/openapi-ts generates a client (in ../heyapi) from
// the spec the running server serves at GET /openapi.yaml, tsc type-checks
// the driver against it, and the driver calls the API as an integrator would.
// A spec that generates types the server's answers do not fit fails here.
func TestHeyAPIClient(t *testing.T) {
	_, npm := lookTools(t)
	pkgDir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := repoRoot(t, pkgDir)
	heyDir := filepath.Join(root, "clients", "heyapi")
	tmp := t.TempDir()
	npmEnv := append(os.Environ(), "NPM_CONFIG_UPDATE_NOTIFIER=false", "NPM_CONFIG_FUND=false", "NPM_CONFIG_AUDIT=false")

	for _, p := range []string{"node_modules/.package-lock.json", "node_modules/.bin/openapi-ts", "node_modules/.bin/tsc", "node_modules/@types/node/package.json"} {
		if _, err := os.Stat(filepath.Join(heyDir, p)); err != nil {
			t.Logf("%s is missing: npm %s", p, strings.Join(npmCI, " "))
			run(t, npmCITimeout, heyDir, npmEnv, "npm ci", npm, npmCI...)
			break
		}
	}

	api := testkit.APIBinary(t)
	apiEnv := childEnv(map[string]string{
		"DYNAMODB_ENDPOINT": dynamotest.Endpoint(),
		"DYNAMODB_TABLE":    dynamotest.TableName(t),
		"AUTH_HS256_SECRET": hs256Secret,
		"CURSOR_SECRET":     cursorSecret,
		"SHUTDOWN_TIMEOUT":  "5s",
		"LOG_LEVEL":         "warn",
	}, "ADDR", "AUTH_JWKS_URL", "AUTH_ISSUER", "AUTH_AUDIENCE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")
	run(t, shortTimeout, tmp, apiEnv, "migrate", api, "migrate")
	baseURL := startServer(t, api, apiEnv, tmp)

	// The spec as served, not the file in the repository: what an integrator
	// downloads is what must generate a working client.
	resp, err := http.Get(baseURL + "/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.yaml: %d %v", resp.StatusCode, err)
	}
	specFile := filepath.Join(tmp, "served-openapi.yaml")
	if err := os.WriteFile(specFile, spec, 0o644); err != nil {
		t.Fatal(err)
	}

	run(t, npmRunTimeout, heyDir, append(npmEnv, "SPEC="+specFile), "generate", npm, "run", "--silent", "generate")
	run(t, npmRunTimeout, heyDir, npmEnv, "build", npm, "run", "--silent", "build")

	alice := mintToken(t, api, apiEnv, "--sub", "u_alice", "--email", "alice@example.com", "--name", "Alice")
	bob := mintToken(t, api, apiEnv, "--sub", "u_bob", "--email", "bob@example.com", "--name", "Bob")
	out := run(t, npmRunTimeout, heyDir, append(npmEnv, "BASE_URL="+baseURL, "TOKEN_ALICE="+alice, "TOKEN_BOB="+bob), "drive", npm, "run", "--silent", "drive")
	if !driveSummary.MatchString(out) {
		t.Fatalf("npm run drive exited 0 but printed no `drive: N passed, 0 failed` line")
	}
}
