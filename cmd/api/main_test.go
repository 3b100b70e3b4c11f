package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/httpapi"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/testkit"
)

// TestMain runs the package's tests on one DynamoDB Local, then removes the
// API binary they shared (testkit.APIBinary).
func TestMain(m *testing.M) {
	code := dynamotest.Run(m)
	testkit.RemoveAPIBinary()
	os.Exit(code)
}

func TestConfig(t *testing.T) {
	t.Run("OK defaults", func(t *testing.T) {
		for _, k := range []string{"ADDR", "DYNAMODB_TABLE", "AWS_REGION", "SHUTDOWN_TIMEOUT", "LOG_LEVEL", "CURSOR_SECRET"} {
			t.Setenv(k, "")
		}
		c, err := configFromEnv()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.Addr, "127.0.0.1:8080"; got != want {
			t.Errorf("Addr: got %q, want %q", got, want)
		}
		if got, want := c.DynamoDBTable, store.DefaultTableName; got != want {
			t.Errorf("DynamoDBTable: got %q, want %q", got, want)
		}
	})
	t.Run("OK secrets masked in logs", func(t *testing.T) {
		t.Setenv("AUTH_HS256_SECRET", "super-secret-value-0123456789abcdef")
		t.Setenv("CURSOR_SECRET", "cursor-secret-value-0123456789abcdef")
		c, err := configFromEnv()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "config", c)
		if strings.Contains(buf.String(), "super-secret") || strings.Contains(buf.String(), "cursor-secret") {
			t.Errorf("a secret reached the log: %s", buf.String())
		}
		if !strings.Contains(buf.String(), `"AUTH_HS256_SECRET":"***"`) || !strings.Contains(buf.String(), `"CURSOR_SECRET":"***"`) {
			t.Errorf("masked secret missing from the log: %s", buf.String())
		}
	})
	t.Run("ErrBadDuration", func(t *testing.T) {
		t.Setenv("SHUTDOWN_TIMEOUT", "soon")
		if _, err := configFromEnv(); err == nil {
			t.Error("want an error for SHUTDOWN_TIMEOUT=soon")
		}
	})
	t.Run("OK metrics listener", func(t *testing.T) {
		t.Setenv("METRICS_ADDR", "") // restores the variable after the test
		if err := os.Unsetenv("METRICS_ADDR"); err != nil {
			t.Fatal(err)
		}
		c, err := configFromEnv()
		if err != nil || c.MetricsAddr != defaultMetricsAddr {
			t.Errorf("METRICS_ADDR unset: %q, %v; want %q", c.MetricsAddr, err, defaultMetricsAddr)
		}
		t.Setenv("METRICS_ADDR", "")
		if c, err := configFromEnv(); err != nil || c.MetricsAddr != "" {
			t.Errorf("METRICS_ADDR empty: %q, %v; want no metrics listener", c.MetricsAddr, err)
		}
		t.Setenv("METRICS_ADDR", "127.0.0.1:8080")
		t.Setenv("ADDR", "127.0.0.1:8080")
		if _, err := configFromEnv(); err == nil {
			t.Error("want an error for METRICS_ADDR = ADDR")
		}
	})
	t.Run("ErrConnectionBounds", func(t *testing.T) {
		for _, kv := range [][2]string{{"WRITE_TIMEOUT", "10s"}, {"WRITE_TIMEOUT", "5s"}, {"READ_TIMEOUT", "-1s"},
			{"IDLE_TIMEOUT", "-1s"}, {"MAX_CONNECTIONS", "0"}, {"MAX_CONNECTIONS", "-5"}} {
			t.Run(kv[0]+"="+kv[1], func(t *testing.T) {
				t.Setenv("REQUEST_TIMEOUT", "10s")
				t.Setenv(kv[0], kv[1])
				if _, err := configFromEnv(); err == nil {
					t.Errorf("want an error for %s=%s (REQUEST_TIMEOUT=10s)", kv[0], kv[1])
				}
			})
		}
	})
	t.Run("ErrRateLimitGlobal", func(t *testing.T) {
		for _, kv := range [][2]string{{"RATE_LIMIT_BLOCK", "0"}, {"RATE_LIMIT_REPLICAS", "0"}, {"RATE_LIMIT_LEASE_TIMEOUT", "0s"},
			{"RATE_LIMIT_LEASE_TIMEOUT", "10s"}} {
			t.Run(kv[0]+"="+kv[1], func(t *testing.T) {
				t.Setenv("REQUEST_TIMEOUT", "10s")
				t.Setenv(kv[0], kv[1])
				if _, err := configFromEnv(); err == nil {
					t.Errorf("want an error for %s=%s (REQUEST_TIMEOUT=10s)", kv[0], kv[1])
				}
			})
		}
	})
	t.Run("ErrShortCursorSecret", func(t *testing.T) {
		t.Setenv("CURSOR_SECRET", "short")
		if _, err := configFromEnv(); err == nil {
			t.Error("want an error for a short CURSOR_SECRET")
		}
	})
}

func TestToken(t *testing.T) {
	const secret = "token-test-secret-0123456789abcdef"
	var out bytes.Buffer
	cfg := Config{AuthHS256Secret: secret}
	if err := token(cfg, []string{"--sub", "u_ada", "--email", "ada@example.com"}, &out); err != nil {
		t.Fatal(err)
	}
	v, err := httpapi.NewVerifier(context.Background(), httpapi.VerifierConfig{HS256Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	id, err := v.Verify(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := id, (authz.Identity{UserID: "u_ada", Email: "ada@example.com"}); got != want {
		t.Errorf("identity: got %+v, want %+v", got, want)
	}
	if err := token(Config{}, []string{"--sub", "x"}, &out); err == nil {
		t.Error("want an error without AUTH_HS256_SECRET")
	}
}

// TestSeed proves `api seed` is idempotent: a second run adds nothing.
func TestSeed(t *testing.T) {
	ctx := context.Background()
	client := store.NewClient(dynamotest.Config(t), store.Options{Endpoint: dynamotest.Endpoint()})
	name := dynamotest.TableName(t)
	if err := store.Migrate(ctx, client, name); err != nil {
		t.Fatal(err)
	}
	count := func() int32 {
		out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(name), Select: "COUNT"})
		if err != nil {
			t.Fatal(err)
		}
		return out.Count
	}
	var log bytes.Buffer
	if err := seed(ctx, store.Open(client, name), &log); err != nil {
		t.Fatal(err)
	}
	first := count()
	if first == 0 {
		t.Fatal("seed wrote nothing")
	}
	log.Reset()
	if err := seed(ctx, store.Open(client, name), &log); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != first {
		t.Errorf("second seed changed the item count: %d -> %d", first, got)
	}
	if strings.Contains(log.String(), "added") {
		t.Errorf("second seed added something:\n%s", log.String())
	}
	// The closing hint is a command that works: with make run's dev
	// secret (the one scripts/run.sh sets), token mints a token.
	run, err := os.ReadFile("../../scripts/run.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(run), `AUTH_HS256_SECRET="`+devHS256Secret+`"`) {
		t.Errorf("scripts/run.sh does not use the dev secret %q the seed's hint prints", devHS256Secret)
	}
	if !strings.Contains(log.String(), "AUTH_HS256_SECRET="+devHS256Secret+" go run ./cmd/api token") {
		t.Errorf("the seed's hint does not give the secret:\n%s", log.String())
	}
	t.Setenv("AUTH_HS256_SECRET", devHS256Secret)
	var tok bytes.Buffer
	if err := run_(t, []string{"token", "--sub", "u_alice", "--email", "alice@example.com"}, &tok); err != nil || strings.Count(tok.String(), ".") != 2 {
		t.Errorf("the hint's command: %v %q", err, tok.String())
	}
}

// run_ is run with a background context.
func run_(t *testing.T, args []string, out *bytes.Buffer) error {
	t.Helper()
	return run(context.Background(), args, out)
}

// TestHelp: `api --help` (and help, -h) prints the commands and exits 0;
// the README names every command it prints.
func TestHelp(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"help", "-h", "--help"} {
		var out bytes.Buffer
		if err := run_(t, []string{arg}, &out); err != nil {
			t.Fatalf("api %s: %v", arg, err)
		}
		for _, cmd := range []string{"serve", "migrate", "seed", "token", "healthcheck"} {
			if !strings.Contains(out.String(), "\n  "+cmd+" ") {
				t.Errorf("api %s does not list %s:\n%s", arg, cmd, out.String())
			}
			if !strings.Contains(string(readme), "`"+cmd+"`") {
				t.Errorf("README.md does not name the command %s", cmd)
			}
		}
	}
}

// TestConfigDocumented: the README's settings table has a row for every
// variable Config reads, with the default Config gives it.
func TestConfigDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeFor[Config]()
	for i := range typ.NumField() {
		name := typ.Field(i).Tag.Get("env")
		if name == "" {
			continue
		}
		def, hasDef := typ.Field(i).Tag.Lookup("envDefault")
		row := "| `" + name + "` |"
		switch at := strings.Index(string(readme), row); {
		case at < 0:
			t.Errorf("README.md has no row for %s", name)
		case hasDef && !strings.HasPrefix(string(readme[at+len(row):]), " `"+def+"`"):
			line, _, _ := strings.Cut(string(readme[at:]), "\n")
			t.Errorf("README.md's row for %s does not give its default %q: %s", name, def, line)
		}
	}
}
