// Package apitest is the harness of the API tests: it serves the real
// tenantd server (wired as cmd/api wires it) over a DynamoDB Local table
// of its own, with clients that validate every answer against
// openapi.yaml, and the helpers both API test suites share (REST's in
// internal/httpapi, GraphQL's in internal/graphapi). It is imported only
// by tests; each test package keeps its own TestMain (dynamotest.Main or
// dynamotest.Run), which must have started DynamoDB Local before
// MustServer is called.
package apitest

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/smithy-go/middleware"
	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/app"
	"github.com/tenantd/tenantd/internal/deletion"
	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/graphapi"
	"github.com/tenantd/tenantd/internal/httpapi"
	"github.com/tenantd/tenantd/internal/obs"
	"github.com/tenantd/tenantd/internal/ratelimit"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/webhook"
)

const (
	// TestSecret is the HS256 secret of every test server (>= 32 bytes).
	TestSecret = "tenantd-httpapi-test-secret-0123456789"
	// ProblemJSON is the media type of every error the API answers.
	ProblemJSON = "application/problem+json"
)

var cursorKey = []byte("tenantd-httpapi-test-cursor-key-0123456789")

// Clock is the injectable clock of a test server: every reading moves it
// one millisecond on, so timestamps and ULIDs are distinct and ordered.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// Now returns the current test time and ticks.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.t
	c.t = c.t.Add(time.Millisecond)
	return now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Server is the real tenantd server over its own DynamoDB table.
type Server struct {
	URL   string
	Echo  *echo.Echo
	Rec   *dynamotest.Recorder // every DynamoDB call the server makes (Reset freely)
	Clock *Clock
	// Raw reaches the server's table directly: not recorded, never faulty
	// (see WithTransport), for reading back what a request really wrote.
	Raw   *dynamodb.Client
	Table string
	// Deletions finishes the offboardings (and large deletes) the server
	// starts; its poll loop does not run unless a test runs it (RunOnce).
	Deletions *deletion.Worker
	// Webhooks is the delivery worker (WithWebhooks; nil otherwise).
	Webhooks *webhook.Worker
	// Registry holds every metric the server exports (served on cmd/api's
	// metrics listener, never on the API).
	Registry *prometheus.Registry
	// HTTP is httptest's client for the server: no token, no validation of
	// the answers (the caller asserts), unlike HTTPClient's.
	HTTP  *http.Client
	scans *atomic.Int64 // Scan calls ever made through the client (never reset)
	seq   *atomic.Int64
	deps  httpapi.Deps
	opts  options
	db    *store.DB   // what Replica wires anew
	app   app.Options // likewise
}

// Scans is the number of DynamoDB Scan calls the server ever issued (the
// test fails at cleanup unless it is 0).
func (ts *Server) Scans() int64 { return ts.scans.Load() }

// options are MustServer's optional settings; see the With* options.
type options struct {
	transport      func(http.RoundTripper) http.RoundTripper
	apiOptions     []func(*middleware.Stack) error
	requestTimeout time.Duration
	rateLimit      *ratelimit.Options
	callerLimit    *ratelimit.Options
	verifier       *httpapi.VerifierConfig
	maxHeaderBytes int
	deletionLease  time.Duration
	offboardGrace  time.Duration
	offboardWait   time.Duration
	maxOwnedOrgs   int
	readTimeout    time.Duration
	endpoint       string    // the server's DynamoDB endpoint
	rawEndpoint    string    // ts.Raw's (and the migration's) endpoint
	log            io.Writer // the server's JSON log (debug level)
	graphQL        graphapi.Limits
	webhooks       *webhook.Policy // run the stream reader and a delivery worker
	noDocsUI       bool
	tracing        *obs.Tracing
}

// Option changes one of MustServer's settings.
type Option func(*options)

// WithGraphQL sets the GraphQL API's limits (BatchWait defaults to 20 ms
// in tests: a level's lookups meet in one batch even under -race).
func WithGraphQL(l graphapi.Limits) Option {
	return func(o *options) { o.graphQL = l }
}

// WithTransport wraps the HTTP transport of the server's DynamoDB client
// (not of ts.Raw), e.g. to inject faults under the SDK's real retryer.
func WithTransport(wrap func(http.RoundTripper) http.RoundTripper) Option {
	return func(o *options) { o.transport = wrap }
}

// WithAPIOptions adds smithy middleware to the server's DynamoDB client.
func WithAPIOptions(fns ...func(*middleware.Stack) error) Option {
	return func(o *options) { o.apiOptions = append(o.apiOptions, fns...) }
}

// WithRequestTimeout sets Deps.RequestTimeout (default: the server's 10 s).
func WithRequestTimeout(d time.Duration) Option {
	return func(o *options) { o.requestTimeout = d }
}

// WithRateLimit replaces the harness's unreachable rate limit.
func WithRateLimit(ro ratelimit.Options) Option {
	return func(o *options) { o.rateLimit = &ro }
}

// WithCallerRateLimit replaces the harness's unreachable per-caller limit.
func WithCallerRateLimit(ro ratelimit.Options) Option {
	return func(o *options) { o.callerLimit = &ro }
}

// WithVerifier replaces the HS256 test verifier (e.g. with a JWKS one).
// Its Now defaults to the server's clock; ts.Token then no longer works.
func WithVerifier(cfg httpapi.VerifierConfig) Option {
	return func(o *options) { o.verifier = &cfg }
}

// WithDeletionLease sets how long a run of a deletion holds its lease
// (default 30 s), so a test can let a dead run's lease expire.
func WithDeletionLease(d time.Duration) Option {
	return func(o *options) { o.deletionLease = d }
}

// offboardWait is how long a test server's DELETE org waits for the
// offboarding before a 202: the server's 2 s is a speed, which a busy
// machine missed (a 202 where the test wanted the org gone); this bounds a
// hang, below the request timeout.
const offboardWait = 8 * time.Second

// WithOffboarding sets how long an offboarding waits before its last
// sweep (default 0 with DynamoDB Local) and how long DELETE org waits for it
// before answering 202 (default offboardWait), so that a test can see an
// offboarding under way.
func WithOffboarding(grace, wait time.Duration) Option {
	return func(o *options) { o.offboardGrace, o.offboardWait = grace, wait }
}

// WithMaxOrgsPerUser sets how many orgs one user may have created (and not
// deleted) when creating another (default: the server's 100, MAX_ORGS_PER_USER).
func WithMaxOrgsPerUser(n int) Option {
	return func(o *options) { o.maxOwnedOrgs = n }
}

// WithReadTimeout serves with http.Server.ReadTimeout set, as cmd/api does
// (READ_TIMEOUT), so a body that does not arrive in time is answered 408.
func WithReadTimeout(d time.Duration) Option {
	return func(o *options) { o.readTimeout = d }
}

// WithMaxHeaderBytes serves with http.Server.MaxHeaderBytes set, as
// cmd/api does (64 KiB), instead of net/http's default of 1 MiB.
func WithMaxHeaderBytes(n int) Option {
	return func(o *options) { o.maxHeaderBytes = n }
}

// WithEndpoints points the server's DynamoDB client at server and ts.Raw
// (which creates the table) at raw; "" keeps dynamotest.Endpoint().
func WithEndpoints(server, raw string) Option {
	return func(o *options) { o.endpoint, o.rawEndpoint = server, raw }
}

// WithLog sends the server's JSON log lines (debug level and up) to w.
func WithLog(w io.Writer) Option {
	return func(o *options) { o.log = w }
}

// WithWebhooks runs, beside the server, what `api serve` runs for
// webhooks: the stream reader dispatching the table's audit events and a
// delivery worker, with the retry schedule pol (short ones keep tests
// fast). They use ts.Raw, so ts.Rec records the requests' calls alone.
func WithWebhooks(pol webhook.Policy) Option {
	return func(o *options) { o.webhooks = &pol }
}

// WithoutDocsUI serves neither GET /docs nor GraphiQL (DOCS_UI=false);
// by default the server has both, as cmd/api's default does.
func WithoutDocsUI() Option {
	return func(o *options) { o.noDocsUI = true }
}

// WithTracing traces the server as cmd/api does with OTEL_* set: its
// requests, their DynamoDB calls and GraphQL levels, and (WithWebhooks)
// its delivery attempts, into t (an in-memory exporter's provider, say).
func WithTracing(t *obs.Tracing) Option {
	return func(o *options) { o.tracing = t }
}

// MustServer creates a table, wires the server exactly as cmd/api does
// (with a test HS256 secret, a test cursor key and an injectable clock) and
// serves it. Every DynamoDB call is recorded in ts.Rec; the test fails at
// cleanup if the server ever issued a Scan. Options (With*) change the
// wiring for hardening tests; without them the server is the default one.
func MustServer(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	LoadSpec(tb)
	ts := &Server{Rec: &dynamotest.Recorder{}, scans: &atomic.Int64{}, seq: &atomic.Int64{}, opts: o,
		Clock: &Clock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}}
	scanGuard := func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("apitest.scanGuard",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if middleware.GetOperationName(ctx) == "Scan" {
					ts.scans.Add(1)
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	}
	ctx, cancel := context.WithCancel(context.Background()) // ends the verifier's JWKS refreshes with the test
	tb.Cleanup(cancel)
	reg := prometheus.NewRegistry()
	metrics := obs.NewMetrics(reg)
	cfg := dynamotest.Config(tb)
	if o.transport != nil {
		cfg.HTTPClient = &http.Client{Transport: o.transport(http.DefaultTransport.(*http.Transport).Clone())}
	}
	endpoint, rawEndpoint := dynamotest.Endpoint(), dynamotest.Endpoint()
	if o.endpoint != "" {
		endpoint = o.endpoint
		cfg.BaseEndpoint = aws.String(endpoint)
	}
	if o.rawEndpoint != "" {
		rawEndpoint = o.rawEndpoint
	}
	apiOptions := append([]func(*middleware.Stack) error{metrics.DynamoDB, ts.Rec.Middleware, scanGuard}, o.apiOptions...)
	if o.tracing != nil {
		apiOptions = append(apiOptions, o.tracing.DynamoDB()...)
	}
	dbc := store.NewClient(cfg, store.Options{Endpoint: endpoint, APIOptions: apiOptions})
	rawCfg := dynamotest.Config(tb)
	rawCfg.BaseEndpoint = aws.String(rawEndpoint)
	var rawOptions []func(*middleware.Stack) error
	if o.tracing != nil { // for the delivery workers (WithWebhooks), whose calls are traced under their attempts
		rawOptions = o.tracing.DynamoDB()
	}
	ts.Raw = store.NewClient(rawCfg, store.Options{Endpoint: rawEndpoint, APIOptions: rawOptions})
	name := dynamotest.TableName(tb)
	ts.Table = name
	if err := store.Migrate(ctx, ts.Raw, name); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	if o.webhooks == nil {
		dynamotest.StreamOff(tb, ts.Raw, name) // a server that runs no webhooks reads no stream
	}
	tb.Cleanup(func() {
		_, _ = ts.Raw.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})

	vcfg := httpapi.VerifierConfig{HS256Secret: TestSecret, Leeway: 30 * time.Second, Now: ts.Clock.Now}
	if o.verifier != nil {
		vcfg = *o.verifier
		if vcfg.Now == nil {
			vcfg.Now = ts.Clock.Now
		}
	}
	verifier, err := httpapi.NewVerifier(ctx, vcfg)
	if err != nil {
		tb.Fatalf("verifier: %v", err)
	}
	limit := ratelimit.Options{PerSecond: 100_000, Burst: 100_000}
	if o.rateLimit != nil {
		limit = *o.rateLimit
	}
	callerLimit := ratelimit.Options{PerSecond: 100_000, Burst: 100_000}
	if o.callerLimit != nil {
		callerLimit = *o.callerLimit
	}
	var logger *slog.Logger
	if o.log != nil {
		logger = slog.New(slog.NewJSONHandler(o.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	db := store.Open(dbc, name)
	// DynamoDB Local's indexes never lag: offboardings need no grace.
	db.SetDeletionTiming(o.deletionLease, o.offboardGrace)
	db.SetMaxOwnedOrgs(o.maxOwnedOrgs)
	ts.Deletions = deletion.NewWorker(&store.Deletions{DB: db}, deletion.Options{})
	tb.Cleanup(ts.Deletions.Close)
	// Receivers in tests listen on loopback, over http.
	appOpts := app.Options{Now: ts.Clock.Now, WebhookURLs: webhook.URLPolicy{AllowPrivate: true}}
	d := app.Deps(db, ts.Deletions, appOpts)
	ts.db, ts.app = db, appOpts
	if o.webhooks != nil {
		ts.startWebhooks(tb, appOpts, *o.webhooks, logger)
	}
	d.Verifier, d.CursorKey, d.Logger, d.Ready, d.Registry, d.Metrics = verifier, cursorKey, logger, db.Ping, reg, metrics
	// cmd/api's limiter, with a budget no test exhausts (unless
	// WithRateLimit says otherwise).
	d.RateLimit, d.CallerRateLimit = ratelimit.New(limit), ratelimit.New(callerLimit)
	d.RequestTimeout, d.OffboardWait = o.requestTimeout, cmp.Or(o.offboardWait, offboardWait)
	d.GraphQL, d.DocsUI, d.Tracing = o.graphQL, !o.noDocsUI, o.tracing
	if d.GraphQL.BatchWait == 0 {
		d.GraphQL.BatchWait = 20 * time.Millisecond
	}
	ts.deps = d
	ts.serve(tb)
	tb.Cleanup(func() {
		if n := ts.scans.Load(); n > 0 {
			tb.Errorf("the server issued %d DynamoDB Scan call(s): tenantd must never scan", n)
		}
	})
	ts.Rec.Reset()
	return ts
}

// serve serves ts.deps on a new httptest server.
func (ts *Server) serve(tb testing.TB) {
	tb.Helper()
	e, err := httpapi.New(ts.deps)
	if err != nil {
		tb.Fatalf("httpapi.New: %v", err)
	}
	srv := httptest.NewUnstartedServer(httpapi.HeadAsGet(e)) // as cmd/api serves it
	if ts.opts.maxHeaderBytes > 0 {
		srv.Config.MaxHeaderBytes = ts.opts.maxHeaderBytes
	}
	srv.Config.ReadTimeout = ts.opts.readTimeout
	srv.Start()
	tb.Cleanup(srv.Close)
	ts.URL, ts.Echo, ts.HTTP, ts.Registry = srv.URL, e, srv.Client(), ts.deps.Registry
}

// Twin serves ts's table, through the same DynamoDB client, recorder,
// clock and log, with another request deadline, and metrics of its own (in
// its Registry). A fault test sets its data up through ts, with the
// service's normal deadlines (a busy machine cannot make the setup miss a
// short one), and sends the requests the fault must end through the twin.
func (ts *Server) Twin(tb testing.TB, requestTimeout time.Duration) *Server {
	tb.Helper()
	twin := ts.sibling()
	twin.deps.RequestTimeout = requestTimeout
	twin.deps.Registry = prometheus.NewRegistry()
	twin.serve(tb)
	return twin
}

// Replica serves ts's table as another process would: services and
// memories of its own (app.Deps anew: nothing loaded from the table yet),
// over the same DynamoDB client, recorder, clock, limiters and settings.
func (ts *Server) Replica(tb testing.TB) *Server {
	tb.Helper()
	r := ts.sibling()
	fresh := app.Deps(ts.db, ts.Deletions, ts.app)
	r.deps.Services, r.deps.Export, r.deps.Idempotency, r.deps.KeyUse = fresh.Services, fresh.Export, fresh.Idempotency, fresh.KeyUse
	r.deps.Registry = prometheus.NewRegistry()
	r.serve(tb)
	return r
}

// sibling is a server over ts's table, client, recorder, clock and
// settings, not serving yet.
func (ts *Server) sibling() *Server {
	return &Server{Rec: ts.Rec, Clock: ts.Clock, Raw: ts.Raw, Table: ts.Table, Deletions: ts.Deletions, scans: ts.scans, seq: ts.seq,
		deps: ts.deps, opts: ts.opts, db: ts.db, app: ts.app}
}

// UniqueID returns a user ID unique within the server, e.g. "owner.3".
func (ts *Server) UniqueID(prefix string) string {
	return fmt.Sprintf("%s.%d", prefix, ts.seq.Add(1))
}

// Token mints a valid HS256 bearer token (one hour) for sub.
func (ts *Server) Token(tb testing.TB, sub, email, name string) string {
	tb.Helper()
	now := ts.Clock.Now()
	return ts.Mint(tb, httpapi.Claims{Email: email, Name: name, RegisteredClaims: jwt.RegisteredClaims{
		Subject: sub, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}})
}

// Mint signs c with the test secret, whatever it claims.
func (ts *Server) Mint(tb testing.TB, c httpapi.Claims) string {
	tb.Helper()
	tok, err := httpapi.MintHS256(TestSecret, c)
	if err != nil {
		tb.Fatalf("mint: %v", err)
	}
	return tok
}

// HTTPClient returns an http.Client that sends token (when not empty) and
// validates every response against openapi.yaml.
func (ts *Server) HTTPClient(tb testing.TB, token string) *http.Client {
	_, router := LoadSpec(tb)
	return &http.Client{Transport: &validatingTransport{tb: tb, base: ts.HTTP.Transport, router: router, token: token}}
}

// Validating returns hc sending through a transport that validates every
// response against openapi.yaml, as HTTPClient's does: for the tests that
// need a client of their own (many connections, say) and still hold every
// answer, retries and replays included, to the contract.
func Validating(tb testing.TB, hc *http.Client) *http.Client {
	_, router := LoadSpec(tb)
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	return &http.Client{Transport: &validatingTransport{tb: tb, base: base, router: router}, Timeout: hc.Timeout}
}

// Client returns the generated client for the server, acting with token
// ("" sends no Authorization header). Every response is validated against
// openapi.yaml; a mismatch fails tb.
func (ts *Server) Client(tb testing.TB, token string) *client.ClientWithResponses {
	tb.Helper()
	c, err := client.NewClientWithResponses(ts.URL, client.WithHTTPClient(ts.HTTPClient(tb, token)))
	if err != nil {
		tb.Fatalf("client: %v", err)
	}
	return c
}

// Actor is a user with a token and a client.
type Actor struct {
	ID, Email, Name string
	C               *client.ClientWithResponses
	HTTP            *http.Client
	Token           string
}

// Actor returns a new user with a unique ID (prefix.N) and a client.
func (ts *Server) Actor(tb testing.TB, prefix string) Actor {
	tb.Helper()
	return ts.ActorWithID(tb, ts.UniqueID(prefix))
}

// ActorWithID returns the user id with a unique email and a client.
func (ts *Server) ActorWithID(tb testing.TB, id string) Actor {
	tb.Helper()
	a := Actor{ID: id, Email: fmt.Sprintf("user-%d@example.com", ts.seq.Add(1)), Name: "Name of " + id}
	a.Token = ts.Token(tb, a.ID, a.Email, a.Name)
	a.C = ts.Client(tb, a.Token)
	a.HTTP = ts.HTTPClient(tb, a.Token)
	return a
}

// Invitee returns a new actor whose token carries email: the one an
// invitation was sent to, which accepting it requires.
func (ts *Server) Invitee(tb testing.TB, prefix, email string) Actor {
	tb.Helper()
	a := Actor{ID: ts.UniqueID(prefix), Email: email}
	a.Name = "Name of " + a.ID
	a.Token = ts.Token(tb, a.ID, a.Email, a.Name)
	a.C = ts.Client(tb, a.Token)
	a.HTTP = ts.HTTPClient(tb, a.Token)
	return a
}

// startWebhooks runs the stream reader and a delivery worker over the
// test's table until the test ends.
func (ts *Server) startWebhooks(tb testing.TB, o app.Options, pol webhook.Policy, log *slog.Logger) {
	raw := store.Open(ts.Raw, ts.Table)
	dispatcher, worker := app.Delivery(raw, o, pol, log)
	if ts.opts.tracing != nil {
		worker.Trace(ts.opts.tracing.Tracer("github.com/tenantd/tenantd/internal/webhook"))
	}
	cfg := dynamotest.Config(tb)
	streams := dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
		o.BaseEndpoint = aws.String(dynamotest.Endpoint())
	})
	reader := raw.NewStreamReader(streams, dispatcher.Queue, log)
	reader.Poll = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); reader.Run(ctx) }()
	go func() { defer wg.Done(); worker.Run(ctx) }()
	ts.Webhooks = worker
	tb.Cleanup(func() { cancel(); wg.Wait() })
}
