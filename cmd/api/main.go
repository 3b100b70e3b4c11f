// Command api runs tenantd: `api serve` (the HTTP API), `api migrate`
// (create the DynamoDB table idempotently), `api seed` (load a demo tenant
// idempotently), `api token` (mint a dev bearer token with the HS256
// secret) and `api healthcheck` (probe the local /readyz).
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/smithy-go/middleware"
	"github.com/caarlos0/env/v11"
	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"

	"github.com/tenantd/tenantd/internal/app"
	"github.com/tenantd/tenantd/internal/deletion"
	"github.com/tenantd/tenantd/internal/graphapi"
	"github.com/tenantd/tenantd/internal/httpapi"
	"github.com/tenantd/tenantd/internal/obs"
	"github.com/tenantd/tenantd/internal/ratelimit"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/webhook"
)

// defaultGCPercent is the collector's target when GOGC is unset. The
// service's live heap is small and it allocates per request, so the
// collector costs it CPU, not memory. Its row in BENCHMARKS.md is
// BenchmarkGetTicket's inproc/tenantd (Go's 100) against
// inproc-gogc400/tenantd; TestDefaultGCPercent is its guard. GOGC and
// GOMEMLIMIT, when set, are the operator's.
const defaultGCPercent = 400

// setGCPercent applies defaultGCPercent unless the environment sets GOGC.
func setGCPercent(lookup func(string) (string, bool)) {
	if _, set := lookup("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
}

func main() {
	setGCPercent(os.LookupEnv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

// Config is every setting, read from the environment (see README).
type Config struct {
	Addr             string        `env:"ADDR" envDefault:"127.0.0.1:8080"`
	MetricsAddr      string        `env:"METRICS_ADDR"`      // unset: defaultMetricsAddr; empty: no metrics listener
	DynamoDBEndpoint string        `env:"DYNAMODB_ENDPOINT"` // DynamoDB Local; empty = AWS
	DynamoDBTable    string        `env:"DYNAMODB_TABLE" envDefault:"tenantd"`
	AWSRegion        string        `env:"AWS_REGION" envDefault:"us-east-1"`
	AuthHS256Secret  string        `env:"AUTH_HS256_SECRET"`
	AuthJWKSURL      string        `env:"AUTH_JWKS_URL"`
	AuthIssuer       string        `env:"AUTH_ISSUER"`
	AuthAudience     string        `env:"AUTH_AUDIENCE"`
	CursorSecret     string        `env:"CURSOR_SECRET"`
	ShutdownTimeout  time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"15s"`
	RequestTimeout   time.Duration `env:"REQUEST_TIMEOUT" envDefault:"10s"`
	ReadTimeout      time.Duration `env:"READ_TIMEOUT" envDefault:"15s"`  // a whole request, body included
	WriteTimeout     time.Duration `env:"WRITE_TIMEOUT" envDefault:"30s"` // handling and writing one response; > REQUEST_TIMEOUT
	IdleTimeout      time.Duration `env:"IDLE_TIMEOUT" envDefault:"60s"`  // a keep-alive connection between requests
	MaxConnections   int           `env:"MAX_CONNECTIONS" envDefault:"1024"`
	DrainDelay       time.Duration `env:"DRAIN_DELAY" envDefault:"2s"`     // /readyz fails this long before the listener closes
	RateLimitRPS     float64       `env:"RATE_LIMIT_RPS" envDefault:"100"` // per org; 0 = off
	RateLimitBurst   int           `env:"RATE_LIMIT_BURST" envDefault:"200"`
	// Offboarding and other deletions that outlive a request.
	OffboardWait       time.Duration `env:"OFFBOARD_WAIT" envDefault:"2s"`          // DELETE org waits this long for the rest before 202
	OffboardGrace      time.Duration `env:"OFFBOARD_GRACE" envDefault:"10s"`        // cut-off -> last GSI1 sweep (index lag)
	DeletionLease      time.Duration `env:"DELETION_LEASE" envDefault:"30s"`        // a run's hold on a deletion
	DeletionPoll       time.Duration `env:"DELETION_POLL" envDefault:"15s"`         // how often the worker looks for dead runs
	InvitationAnyEmail bool          `env:"INVITATION_ANY_EMAIL"`                   // accept invitations whatever the token's email
	MaxOrgsPerUser     int           `env:"MAX_ORGS_PER_USER" envDefault:"100"`     // orgs one user may have created that still exist
	CallerLimitRPS     float64       `env:"RATE_LIMIT_CALLER_RPS" envDefault:"100"` // per token subject, before authorization; 0 = off
	CallerLimitBurst   int           `env:"RATE_LIMIT_CALLER_BURST" envDefault:"200"`
	// The limits are global (one bucket per key in the table) unless
	// RATE_LIMIT_LOCAL; each replica runs at most RATE_LIMIT_BLOCK tokens
	// (and burst/RATE_LIMIT_REPLICAS) ahead of a bucket, half held, half
	// on credit.
	RateLimitLocal    bool          `env:"RATE_LIMIT_LOCAL"`
	RateLimitBlock    int           `env:"RATE_LIMIT_BLOCK" envDefault:"1000"`
	RateLimitReplicas int           `env:"RATE_LIMIT_REPLICAS" envDefault:"2"`
	RateLimitTimeout  time.Duration `env:"RATE_LIMIT_LEASE_TIMEOUT" envDefault:"250ms"`
	LogLevel          slog.Level    `env:"LOG_LEVEL" envDefault:"info"`
	// Webhooks.
	WebhookAllowPrivate bool          `env:"WEBHOOK_ALLOW_PRIVATE_NETWORKS"`        // http and private addresses (development only)
	WebhookDispatcher   string        `env:"WEBHOOK_DISPATCHER" envDefault:"local"` // local: read the stream here; lambda: the Lambda function does
	WebhookTimeout      time.Duration `env:"WEBHOOK_TIMEOUT" envDefault:"15s"`      // one attempt, the endpoint's answer included; a worker's lease is 4 times it
	WebhookFirstRetry   time.Duration `env:"WEBHOOK_FIRST_RETRY" envDefault:"10s"`  // before the first retry; each next one doubles, up to an hour
	// The GraphQL API's limits (0: graphapi's defaults) and introspection.
	GraphQLIntrospection bool `env:"GRAPHQL_INTROSPECTION"` // __schema and __type; make run turns it on
	GraphQLMaxDepth      int  `env:"GRAPHQL_MAX_DEPTH" envDefault:"10"`
	GraphQLMaxComplexity int  `env:"GRAPHQL_MAX_COMPLEXITY" envDefault:"10000"`
	// GET /docs (the API reference) and GraphiQL on a browser's GET
	// /v1/graphql; false turns both off (production, if you like).
	DocsUI bool `env:"DOCS_UI" envDefault:"true"`
}

// registerLimits exports each global limiter's counters: its Ledger
// writes (by outcome) and its decisions (admitted; taken by the fallback
// while the table failed).
func registerLimits(reg prometheus.Registerer, limits map[string]*ratelimit.Limiter) {
	for policy, l := range limits {
		st := l.Stats()
		for _, c := range []struct {
			name, help string
			v          *atomic.Int64
		}{
			{"tenantd_ratelimit_lease_writes_total", "Writes to the global rate-limit buckets (one UpdateItem each).", &st.Writes},
			{"tenantd_ratelimit_lease_refusals_total", "Lease writes that found the global bucket empty.", &st.Refusals},
			{"tenantd_ratelimit_lease_failures_total", "Lease writes that failed or timed out.", &st.Failures},
			{"tenantd_ratelimit_admitted_total", "Requests the limiter admitted.", &st.Admitted},
			{"tenantd_ratelimit_fallback_total", "Decisions taken in a fallback episode (the table failing or late): on credit, without waiting for it.", &st.Fallback},
			{"tenantd_ratelimit_waits_total", "Requests that waited for a lease, their key's balance being unable to pay.", &st.Waits},
		} {
			v := c.v
			reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help,
				ConstLabels: prometheus.Labels{"policy": policy}}, func() float64 { return float64(v.Load()) }))
		}
	}
}

// defaultMetricsAddr is where metrics are served when METRICS_ADDR is not
// set: loopback only, never the API's listener.
const defaultMetricsAddr = "127.0.0.1:9090"

// maxHeaderReadTimeout bounds reading a request's headers (less when
// READ_TIMEOUT is shorter).
const maxHeaderReadTimeout = 10 * time.Second

func configFromEnv() (Config, error) {
	c, err := env.ParseAs[Config]()
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	if _, set := os.LookupEnv("METRICS_ADDR"); !set {
		c.MetricsAddr = defaultMetricsAddr
	}
	if c.ShutdownTimeout <= 0 || c.RequestTimeout <= 0 {
		return c, errors.New("config: SHUTDOWN_TIMEOUT and REQUEST_TIMEOUT must be positive")
	}
	if c.OffboardWait < 0 || c.OffboardGrace < 0 || c.DeletionLease < time.Second || c.DeletionPoll <= 0 {
		return c, errors.New("config: OFFBOARD_WAIT and OFFBOARD_GRACE must be >= 0, DELETION_LEASE >= 1s, DELETION_POLL > 0")
	}
	if c.ReadTimeout <= 0 || c.WriteTimeout <= 0 || c.IdleTimeout <= 0 {
		return c, errors.New("config: READ_TIMEOUT, WRITE_TIMEOUT and IDLE_TIMEOUT must be positive")
	}
	if c.WriteTimeout <= c.RequestTimeout {
		return c, fmt.Errorf("config: WRITE_TIMEOUT (%v) must exceed REQUEST_TIMEOUT (%v), or answers at the deadline cannot be written", c.WriteTimeout, c.RequestTimeout)
	}
	if c.MaxConnections < 1 {
		return c, errors.New("config: MAX_CONNECTIONS must be at least 1")
	}
	if c.MetricsAddr != "" && c.MetricsAddr == c.Addr {
		return c, errors.New("config: METRICS_ADDR must differ from ADDR: metrics are never served on the API's listener")
	}
	if c.RateLimitRPS < 0 || c.RateLimitBurst < 1 {
		return c, errors.New("config: RATE_LIMIT_RPS must be >= 0 and RATE_LIMIT_BURST >= 1")
	}
	if c.GraphQLMaxDepth < 1 || c.GraphQLMaxComplexity < 1 {
		return c, errors.New("config: GRAPHQL_MAX_DEPTH and GRAPHQL_MAX_COMPLEXITY must be >= 1")
	}
	if c.CallerLimitRPS < 0 || c.CallerLimitBurst < 1 {
		return c, errors.New("config: RATE_LIMIT_CALLER_RPS must be >= 0 and RATE_LIMIT_CALLER_BURST >= 1")
	}
	if c.WebhookDispatcher != "local" && c.WebhookDispatcher != "lambda" {
		return c, errors.New("config: WEBHOOK_DISPATCHER must be local or lambda")
	}
	if c.WebhookTimeout < 100*time.Millisecond || c.WebhookFirstRetry < 100*time.Millisecond {
		return c, errors.New("config: WEBHOOK_TIMEOUT and WEBHOOK_FIRST_RETRY must be at least 100ms")
	}
	if c.RateLimitBlock < 1 || c.RateLimitReplicas < 1 || c.RateLimitTimeout <= 0 || c.RateLimitTimeout >= c.RequestTimeout {
		return c, errors.New("config: RATE_LIMIT_BLOCK and RATE_LIMIT_REPLICAS must be >= 1, RATE_LIMIT_LEASE_TIMEOUT positive and below REQUEST_TIMEOUT")
	}
	if c.MaxOrgsPerUser < 1 {
		return c, errors.New("config: MAX_ORGS_PER_USER must be at least 1")
	}
	if c.CursorSecret != "" && len(c.CursorSecret) < 32 {
		return c, errors.New("config: CURSOR_SECRET must be at least 32 bytes")
	}
	return c, nil
}

// LogValue is every setting, keyed by its environment variable, with the
// secrets (the fields named *Secret) masked: the fields are listed once, in
// Config.
func (c Config) LogValue() slog.Value {
	v, t := reflect.ValueOf(c), reflect.TypeFor[Config]()
	attrs := make([]slog.Attr, 0, t.NumField())
	for i := range t.NumField() {
		f, val := t.Field(i), v.Field(i).Interface()
		if d, ok := val.(time.Duration); ok {
			val = d.String()
		}
		if strings.HasSuffix(f.Name, "Secret") && val != "" {
			val = "***"
		}
		attrs = append(attrs, slog.Any(f.Tag.Get("env"), val))
	}
	return slog.GroupValue(attrs...)
}

// usage is what `api help` (-h, --help) prints.
const usage = `api: tenantd's API server and its tools.

Usage: api [command] [flags]

Commands:
  serve        run the HTTP API (the default)
  migrate      create the DynamoDB table, idempotently, and wait until it is ACTIVE
  seed         load seed 000's demo tenant, idempotently
  token        mint a bearer token with AUTH_HS256_SECRET (api token -h)
  healthcheck  exit 0 when the local server's /readyz answers 200
  help         this text

Settings come from the environment (ADDR, DYNAMODB_ENDPOINT, AUTH_HS256_SECRET,
...): the README's Configuration table lists every one, with its default.
`

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprint(stdout, usage)
		return nil
	}
	cfg, err := configFromEnv()
	if err != nil {
		return err
	}
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, cfg)
	case "migrate":
		client, err := dynamoClient(ctx, cfg)
		if err != nil {
			return err
		}
		if err := store.Migrate(ctx, client, cfg.DynamoDBTable); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "table %s is ACTIVE\n", cfg.DynamoDBTable)
		return nil
	case "token":
		return token(cfg, args, stdout)
	case "healthcheck":
		return healthcheck(ctx, cfg)
	case "seed":
		client, err := dynamoClient(ctx, cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "seed: DynamoDB at %s, table %s\n", cmp.Or(cfg.DynamoDBEndpoint, "AWS ("+cfg.AWSRegion+")"), cfg.DynamoDBTable)
		return seed(ctx, store.Open(client, cfg.DynamoDBTable), stdout)
	default:
		return fmt.Errorf("unknown command %q (want serve, migrate, seed, token, healthcheck or help)", cmd)
	}
}

// healthcheck exits 0 when the local server's /readyz answers 200: the
// container healthcheck of a distroless image, which has no curl.
func healthcheck(ctx context.Context, cfg Config) error {
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return err
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %s", resp.Status)
	}
	return nil
}

func dynamoClient(ctx context.Context, cfg Config, apiOptions ...func(*middleware.Stack) error) (*dynamodb.Client, error) {
	awsCfg, err := awsConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return store.NewClient(awsCfg, store.Options{Endpoint: cfg.DynamoDBEndpoint, APIOptions: apiOptions}), nil
}

// streamsClient reaches the table's change stream (DynamoDB Local's too).
func streamsClient(ctx context.Context, cfg Config) (*dynamodbstreams.Client, error) {
	awsCfg, err := awsConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return dynamodbstreams.NewFromConfig(awsCfg, func(o *dynamodbstreams.Options) {
		if cfg.DynamoDBEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.DynamoDBEndpoint)
		}
	}), nil
}

func awsConfig(ctx context.Context, cfg Config) (aws.Config, error) {
	// The SDK keeps 10 idle connections per host by default: under load
	// that means new (TLS) connections per request to DynamoDB.
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns, t.MaxIdleConnsPerHost = 256, 128
	})
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(cfg.AWSRegion), awsconfig.WithHTTPClient(httpClient)}
	if cfg.DynamoDBEndpoint != "" && os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		// DynamoDB Local accepts any credentials; don't go looking for real ones.
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("aws config: %w", err)
	}
	return awsCfg, nil
}

func serve(ctx context.Context, cfg Config) error {
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	slog.SetDefault(log) // what logs through slog's default logger (the JWKS fetch) is a JSON line too
	log.Info("starting tenantd", "config", cfg)
	verifier, err := httpapi.NewVerifier(ctx, httpapi.VerifierConfig{HS256Secret: cfg.AuthHS256Secret, JWKSURL: cfg.AuthJWKSURL,
		Issuer: cfg.AuthIssuer, Audience: cfg.AuthAudience, Leeway: 30 * time.Second})
	if err != nil {
		return err
	}
	cursorKey := []byte(cfg.CursorSecret)
	if len(cursorKey) == 0 {
		cursorKey = make([]byte, 32)
		_, _ = rand.Read(cursorKey)
		log.Warn("CURSOR_SECRET is not set: cursors are signed with a random key and break on restart")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := obs.NewMetrics(reg)
	// Tracing: only the standard OTEL_* variables configure it; off (nil)
	// unless they name an exporter or an endpoint.
	tracing, err := obs.TracingFromEnv(ctx)
	if err != nil {
		return err
	}
	defer func() {
		tctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tracing.Shutdown(tctx); err != nil {
			log.Warn("tracing: the last spans were not exported", "err", err.Error())
		}
	}()
	apiOptions := []func(*middleware.Stack) error{metrics.DynamoDB}
	if tracing != nil {
		log.Info("tracing on: spans are exported as the OTEL_* variables say")
		apiOptions = append(apiOptions, tracing.DynamoDB()...)
	}
	client, err := dynamoClient(ctx, cfg, apiOptions...)
	if err != nil {
		return err
	}
	db := store.Open(client, cfg.DynamoDBTable)
	db.SetDeletionTiming(cfg.DeletionLease, cfg.OffboardGrace)
	db.SetMaxOwnedOrgs(cfg.MaxOrgsPerUser)
	// Deletions that outlive a request (offboardings, large teams and
	// tickets) are finished by this worker, here or on any replica.
	deletions := deletion.NewWorker(&store.Deletions{DB: db}, deletion.Options{Poll: cfg.DeletionPoll, Log: log})
	defer deletions.Close()
	go deletions.Run(ctx)
	var draining atomic.Bool
	ping := cachedPing(db.Ping, time.Second, 2*time.Second) // a probe learns of a hung DynamoDB within 2 s
	ready := func(ctx context.Context) error {
		if draining.Load() {
			return httpapi.ErrShuttingDown
		}
		return ping(ctx)
	}
	opts := app.Options{InvitationAnyEmail: cfg.InvitationAnyEmail, WebhookURLs: webhook.URLPolicy{AllowPrivate: cfg.WebhookAllowPrivate}}
	// Webhooks: this replica's worker sends the deliveries due (anyone's);
	// unless the Lambda function does it, its stream reader dispatches the
	// table's new audit events into deliveries.
	dispatcher, worker := app.Delivery(db, opts, webhook.Policy{Timeout: cfg.WebhookTimeout, FirstRetry: cfg.WebhookFirstRetry}, log)
	if tracing != nil {
		worker.Trace(tracing.Tracer("github.com/tenantd/tenantd/internal/webhook"))
	}
	dispatcher.Lag, worker.OldestDue = metrics.DispatchLag, metrics.OldestDue
	go worker.Run(ctx)
	if cfg.WebhookDispatcher == "local" {
		streams, err := streamsClient(ctx, cfg)
		if err != nil {
			return err
		}
		go db.NewStreamReader(streams, dispatcher.Queue, log).Run(ctx)
	}
	d := app.Deps(db, deletions, opts)
	d.Verifier, d.CursorKey, d.Logger, d.Ready, d.Registry, d.Metrics = verifier, cursorKey, log, ready, reg, metrics
	global := func(policy string) ratelimit.Global {
		if cfg.RateLimitLocal {
			return ratelimit.Global{}
		}
		return ratelimit.Global{Ledger: &store.Limits{DB: db}, Block: cfg.RateLimitBlock, Replicas: cfg.RateLimitReplicas,
			Timeout: cfg.RateLimitTimeout, Log: log.With("policy", policy)}
	}
	d.RateLimit = ratelimit.New(ratelimit.Options{PerSecond: cfg.RateLimitRPS, Burst: cfg.RateLimitBurst, Global: global("org")})
	d.CallerRateLimit = ratelimit.New(ratelimit.Options{PerSecond: cfg.CallerLimitRPS, Burst: cfg.CallerLimitBurst, Global: global("caller")})
	registerLimits(reg, map[string]*ratelimit.Limiter{"org": d.RateLimit, "caller": d.CallerRateLimit})
	d.RequestTimeout, d.OffboardWait, d.WriteTimeout = cfg.RequestTimeout, cfg.OffboardWait, cfg.WriteTimeout
	d.GraphQL = graphapi.Limits{Introspection: cfg.GraphQLIntrospection, MaxDepth: cfg.GraphQLMaxDepth, MaxComplexity: cfg.GraphQLMaxComplexity}
	d.DocsUI, d.Tracing = cfg.DocsUI, tracing
	e, err := httpapi.New(d)
	if err != nil {
		return err
	}
	// Every connection is bounded in time (headers, the whole request, the
	// response, idleness) and in number: a slow or silent client costs a
	// goroutine for at most these timeouts, and at most MAX_CONNECTIONS of
	// them are held at once (more wait in the listen backlog).
	// Under pressure (3/4 of MAX_CONNECTIONS open), connections that hold a
	// slot without using it go: idle ones after half a second, silent or
	// slowloris new ones, bodies still trickling in and answers left unread
	// after 2 s (conns.go).
	guard := newConnGuard(cfg.MaxConnections, 2*time.Second, 500*time.Millisecond)
	stopGuard := make(chan struct{})
	defer close(stopGuard)
	go guard.run(250*time.Millisecond, stopGuard)
	srv := &http.Server{Handler: guard.bodies(httpapi.MaxBodyBytes, httpapi.HeadAsGet(e)), ReadHeaderTimeout: min(maxHeaderReadTimeout, cfg.ReadTimeout), ReadTimeout: cfg.ReadTimeout,
		WriteTimeout: cfg.WriteTimeout, IdleTimeout: cfg.IdleTimeout, MaxHeaderBytes: 64 << 10, ConnState: guard.track, ConnContext: connContext,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	l, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(meteredListener{netutil.LimitListener(l, cfg.MaxConnections)}) }()
	log.Info("listening", "addr", l.Addr().String())

	// Metrics on their own listener (a scraper's, not the API's clients').
	var msrv *http.Server
	if cfg.MetricsAddr != "" {
		ml, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			_ = srv.Close()
			return fmt.Errorf("metrics listener: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
		msrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
		go func() { errc <- msrv.Serve(netutil.LimitListener(ml, 16)) }()
		log.Info("serving metrics", "addr", ml.Addr().String())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Readiness flips first and the server keeps serving for a moment, so
	// load balancers see /readyz fail and stop routing here; then in-flight
	// requests finish. Both happen within SHUTDOWN_TIMEOUT.
	draining.Store(true)
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	select {
	case <-time.After(min(cfg.DrainDelay, cfg.ShutdownTimeout/2)):
	case err := <-errc:
		return err
	}
	drain(sctx, log, srv)
	if msrv != nil {
		drain(sctx, log, msrv)
	}
	return nil
}

// drain shuts srv down gracefully until ctx ends, then closes whatever
// connections are left: a client that sends its body a byte at a time, or
// never reads its answer, cannot hold the process past SHUTDOWN_TIMEOUT.
// Requests cut short that way are the clients' to retry (every write is
// all or nothing, and creating POSTs take an Idempotency-Key).
func drain(ctx context.Context, log *slog.Logger, srv *http.Server) {
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("shutdown deadline reached with connections still open: closing them", "err", err.Error())
		_ = srv.Close()
	}
}

func token(cfg Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	sub := fs.String("sub", "", "user ID (required)")
	email := fs.String("email", "", "email claim")
	name := fs.String("name", "", "name claim")
	ttl := fs.Duration("ttl", time.Hour, "lifetime")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *sub == "" {
		return errors.New("token: --sub is required")
	}
	if cfg.AuthHS256Secret == "" {
		return errors.New("token: AUTH_HS256_SECRET is not set")
	}
	now := time.Now()
	c := httpapi.Claims{Email: *email, Name: *name, RegisteredClaims: jwt.RegisteredClaims{
		Subject: *sub, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(*ttl)), Issuer: cfg.AuthIssuer}}
	if cfg.AuthAudience != "" {
		c.Audience = jwt.ClaimStrings{cfg.AuthAudience}
	}
	tok, err := httpapi.MintHS256(cfg.AuthHS256Secret, c)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

// cachedPing asks ping at most once per ttl and answers from its last
// answer meanwhile: /readyz needs no token, so however often anyone probes
// it, DynamoDB's control plane (DescribeTable, throttled per account) is
// asked at most once a ttl per process. Concurrent probes wait for the one
// call in flight, each for as long as its own context allows. The call
// runs on a context of its own (bounded by timeout), never a prober's: a
// prober that hangs up cannot fail the check for everyone.
func cachedPing(ping func(context.Context) error, ttl, timeout time.Duration) func(context.Context) error {
	var (
		mu       sync.Mutex
		at       time.Time
		last     error
		inflight chan struct{}
	)
	return func(ctx context.Context) error {
		mu.Lock()
		if !at.IsZero() && time.Since(at) < ttl {
			defer mu.Unlock()
			return last
		}
		if inflight == nil {
			done := make(chan struct{})
			inflight = done
			go func() {
				pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
				err := ping(pctx)
				cancel()
				mu.Lock()
				last, at, inflight = err, time.Now(), nil
				mu.Unlock()
				close(done)
			}()
		}
		wait := inflight
		mu.Unlock()
		select {
		case <-wait:
			mu.Lock()
			defer mu.Unlock()
			return last
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
