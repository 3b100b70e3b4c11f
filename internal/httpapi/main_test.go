// The API tests drive a real server on DynamoDB Local through the client
// generated from openapi.yaml, and read as its specification. A resource's
// behaviour is one test in the file named as its product file (TestOrg in
// org_test.go, TestUser in user_test.go, TestTeam, TestMember, TestTicket,
// TestInvitation, TestAuditLog), with a subtest per status, each with a
// server of its own, and in it a subtest per operation and case, started
// with spec: TestTicket/412/updateTicket, TestTicket/404/getTicket/unknown
// ticket. What every operation answers alike is a test generated from the
// spec, with a subtest "<status>/<operationId>/<case>" per operation that
// documents the status: 401 and 413 and 500 in errors_test.go, 415 and
// unknown query parameters (400) in validation_test.go, 429 in
// ratelimit_test.go, 503 in unavailable_test.go, 304 in
// conditional_test.go, 404 to an outsider in matrix_test.go, each role's
// answer in roles_test.go, 422 in idempotency_test.go. Once the whole
// package has run, TestMain fails it unless every response openapi.yaml
// documents was such a subtest (statuses_test.go), and every documented
// success status was answered.
package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantd/tenantd"
	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/app"
	"github.com/tenantd/tenantd/internal/deletion"
	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/graphapi"
	"github.com/tenantd/tenantd/internal/httpapi"
	"github.com/tenantd/tenantd/internal/obs"
	"github.com/tenantd/tenantd/internal/ratelimit"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/store/storetest"
)

func TestMain(m *testing.M) {
	// Register the email format (what openapi3.DefineStringFormat("email",
	// openapi3.FormatOfStringForEmail) does, without the deprecated name)
	// before any goroutine validates anything: the registry is a plain
	// package-level map in kin-openapi.
	openapi3.DefineStringFormatValidator("email", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForEmail))
	// GET /openapi.yaml answers YAML text as the OpenAPI media type: the
	// response validator checks it is a string, as the spec says.
	openapi3filter.RegisterBodyDecoder("application/vnd.oai.openapi",
		func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(body)
			return string(b), err
		})
	code := dynamotest.Run(m)
	if code == 0 && wholeSuite() {
		// The resource tests each run their own servers: only all of them
		// together must produce every documented success status, and
		// have a subtest for every documented response (statuses_test.go).
		code = checkCovered(http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusNoContent)
		if c := checkDocumentedStatuses(os.Stderr, testing.Verbose()); c != 0 {
			code = c
		}
	}
	os.Exit(code)
}

// wholeSuite reports whether every test of the package ran (no -run or
// -skip filter).
func wholeSuite() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return true
}

// covered is every (operation, status) any test server answered.
var covered = struct {
	sync.Mutex
	seen map[string]map[int]bool
}{seen: map[string]map[int]bool{}}

// checkCovered returns 1, after saying which, unless every operation of
// the spec that documents one of statuses was answered with it by some
// test server.
func checkCovered(statuses ...int) int {
	doc, err := openapi3.NewLoader().LoadFromData(tenantd.OpenAPISpec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	covered.Lock()
	defer covered.Unlock()
	code := 0
	for _, op := range specOperations(doc) {
		o := doc.Paths.Value(op.Path).GetOperation(op.Method)
		for _, status := range statuses {
			if o != nil && o.Responses.Status(status) != nil && !covered.seen[op.ID][status] {
				fmt.Fprintf(os.Stderr, "FAIL: %s (%s %s) documents %d but no test got it\n", op.ID, op.Method, op.Path, status)
				code = 1
			}
		}
	}
	return code
}

const (
	// testSecret is the HS256 secret of every test server (>= 32 bytes).
	testSecret  = "tenantd-httpapi-test-secret-0123456789"
	problemJSON = "application/problem+json"
)

var cursorKey = []byte("tenantd-httpapi-test-cursor-key-0123456789")

// testClock is the injectable clock of a test server: every reading moves
// it one millisecond on, so timestamps and ULIDs are distinct and ordered.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

// Now returns the current test time and ticks.
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.t
	c.t = c.t.Add(time.Millisecond)
	return now
}

// Advance moves the clock forward by d.
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testServer is the real tenantd server over its own DynamoDB table.
type testServer struct {
	URL   string
	Echo  *echo.Echo
	Rec   *dynamotest.Recorder // every DynamoDB call the server makes (Reset freely)
	Clock *testClock
	// Raw reaches the server's table directly: not recorded, never faulty
	// (see withTransport), for reading back what a request really wrote.
	Raw   *dynamodb.Client
	Table string
	// Deletions finishes the offboardings (and large deletes) the server
	// starts; its poll loop does not run unless a test runs it (RunOnce).
	Deletions *deletion.Worker
	// Registry holds every metric the server exports (served on cmd/api's
	// metrics listener, never on the API).
	Registry *prometheus.Registry
	scans    atomic.Int64 // Scan calls ever made through the client (never reset)
	seq      atomic.Int64
	http     *http.Client
}

// record notes that a test server answered op with status (see
// checkCovered).
func (ts *testServer) record(op string, status int) {
	covered.Lock()
	defer covered.Unlock()
	if covered.seen[op] == nil {
		covered.seen[op] = map[int]bool{}
	}
	covered.seen[op][status] = true
}

var (
	specOnce   sync.Once
	specDoc    *openapi3.T
	specRouter routers.Router
	specErr    error
)

// loadSpec parses openapi.yaml (tenantd.OpenAPISpec) once for the package.
func loadSpec(tb testing.TB) (*openapi3.T, routers.Router) {
	tb.Helper()
	specOnce.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromData(tenantd.OpenAPISpec)
		if err != nil {
			specErr = fmt.Errorf("load openapi.yaml: %w", err)
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			specErr = fmt.Errorf("openapi.yaml is invalid: %w", err)
			return
		}
		doc.Servers = nil
		r, err := gorillamux.NewRouter(doc)
		if err != nil {
			specErr = fmt.Errorf("router: %w", err)
			return
		}
		specDoc, specRouter = doc, r
	})
	if specErr != nil {
		tb.Fatal(specErr)
	}
	return specDoc, specRouter
}

// serverOptions are MustServer's optional settings; see the with* options.
type serverOptions struct {
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
	endpoint       string    // the server's DynamoDB endpoint
	rawEndpoint    string    // ts.Raw's (and the migration's) endpoint
	log            io.Writer // the server's JSON log (debug level)
	graphQL        graphapi.Limits
}

// serverOption changes one of MustServer's settings.
type serverOption func(*serverOptions)

// withGraphQL sets the GraphQL API's limits (BatchWait defaults to 20 ms
// in tests: a level's lookups meet in one batch even under -race).
func withGraphQL(l graphapi.Limits) serverOption {
	return func(o *serverOptions) { o.graphQL = l }
}

// withTransport wraps the HTTP transport of the server's DynamoDB client
// (not of ts.Raw), e.g. to inject faults under the SDK's real retryer.
func withTransport(wrap func(http.RoundTripper) http.RoundTripper) serverOption {
	return func(o *serverOptions) { o.transport = wrap }
}

// withAPIOptions adds smithy middleware to the server's DynamoDB client.
func withAPIOptions(fns ...func(*middleware.Stack) error) serverOption {
	return func(o *serverOptions) { o.apiOptions = append(o.apiOptions, fns...) }
}

// withRequestTimeout sets Deps.RequestTimeout (default: the server's 10 s).
func withRequestTimeout(d time.Duration) serverOption {
	return func(o *serverOptions) { o.requestTimeout = d }
}

// withRateLimit replaces the harness's unreachable rate limit.
func withRateLimit(ro ratelimit.Options) serverOption {
	return func(o *serverOptions) { o.rateLimit = &ro }
}

// withCallerRateLimit replaces the harness's unreachable per-caller limit.
func withCallerRateLimit(ro ratelimit.Options) serverOption {
	return func(o *serverOptions) { o.callerLimit = &ro }
}

// withVerifier replaces the HS256 test verifier (e.g. with a JWKS one).
// Its Now defaults to the server's clock; ts.Token then no longer works.
func withVerifier(cfg httpapi.VerifierConfig) serverOption {
	return func(o *serverOptions) { o.verifier = &cfg }
}

// withDeletionLease sets how long a run of a deletion holds its lease
// (default 30 s), so a test can let a dead run's lease expire.
func withDeletionLease(d time.Duration) serverOption {
	return func(o *serverOptions) { o.deletionLease = d }
}

// withOffboarding sets how long an offboarding waits before its last
// sweep (default 0 with DynamoDB Local) and how long DELETE org waits for it
// before answering 202 (default: the server's 2 s), so that a test can see
// an offboarding under way.
func withOffboarding(grace, wait time.Duration) serverOption {
	return func(o *serverOptions) { o.offboardGrace, o.offboardWait = grace, wait }
}

// withMaxHeaderBytes serves with http.Server.MaxHeaderBytes set, as
// cmd/api does (64 KiB), instead of net/http's default of 1 MiB.
func withMaxHeaderBytes(n int) serverOption {
	return func(o *serverOptions) { o.maxHeaderBytes = n }
}

// withEndpoints points the server's DynamoDB client at server and ts.Raw
// (which creates the table) at raw; "" keeps dynamotest.Endpoint().
func withEndpoints(server, raw string) serverOption {
	return func(o *serverOptions) { o.endpoint, o.rawEndpoint = server, raw }
}

// withLog sends the server's JSON log lines (debug level and up) to w.
func withLog(w io.Writer) serverOption {
	return func(o *serverOptions) { o.log = w }
}

// MustServer creates a table, wires the server exactly as cmd/api does
// (with a test HS256 secret, a test cursor key and an injectable clock) and
// serves it. Every DynamoDB call is recorded in ts.Rec; the test fails at
// cleanup if the server ever issued a Scan. Options (with*) change the
// wiring for hardening tests; without them the server is the default one.
func MustServer(tb testing.TB, opts ...serverOption) *testServer {
	tb.Helper()
	var o serverOptions
	for _, opt := range opts {
		opt(&o)
	}
	loadSpec(tb)
	ts := &testServer{Rec: &dynamotest.Recorder{},
		Clock: &testClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}}
	scanGuard := func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("httpapi_test.scanGuard",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if middleware.GetOperationName(ctx) == "Scan" {
					ts.scans.Add(1)
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	}
	ctx := context.Background()
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
	dbc := store.NewClient(cfg, store.Options{
		Endpoint:   endpoint,
		APIOptions: append([]func(*middleware.Stack) error{metrics.DynamoDB, ts.Rec.Middleware, scanGuard}, o.apiOptions...),
	})
	rawCfg := dynamotest.Config(tb)
	rawCfg.BaseEndpoint = aws.String(rawEndpoint)
	ts.Raw = store.NewClient(rawCfg, store.Options{Endpoint: rawEndpoint})
	name := dynamotest.TableName(tb)
	ts.Table = name
	if err := store.Migrate(ctx, ts.Raw, name); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	tb.Cleanup(func() {
		_, _ = ts.Raw.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})

	vcfg := httpapi.VerifierConfig{HS256Secret: testSecret, Leeway: 30 * time.Second, Now: ts.Clock.Now}
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
	ts.Deletions = deletion.NewWorker(&store.Deletions{DB: db}, deletion.Options{})
	tb.Cleanup(ts.Deletions.Close)
	d := app.Deps(db, ts.Deletions, app.Options{Now: ts.Clock.Now})
	d.Verifier, d.CursorKey, d.Logger, d.Ready, d.Registry, d.Metrics = verifier, cursorKey, logger, db.Ping, reg, metrics
	// cmd/api's limiter, with a budget no test exhausts (unless
	// withRateLimit says otherwise).
	d.RateLimit, d.CallerRateLimit = ratelimit.New(limit), ratelimit.New(callerLimit)
	d.RequestTimeout, d.OffboardWait = o.requestTimeout, o.offboardWait
	d.GraphQL = o.graphQL
	if d.GraphQL.BatchWait == 0 {
		d.GraphQL.BatchWait = 20 * time.Millisecond
	}
	e, err := httpapi.New(d)
	if err != nil {
		tb.Fatalf("httpapi.New: %v", err)
	}
	srv := httptest.NewUnstartedServer(e)
	if o.maxHeaderBytes > 0 {
		srv.Config.MaxHeaderBytes = o.maxHeaderBytes
	}
	srv.Start()
	tb.Cleanup(srv.Close)
	tb.Cleanup(func() {
		if n := ts.scans.Load(); n > 0 {
			tb.Errorf("the server issued %d DynamoDB Scan call(s): tenantd must never scan", n)
		}
	})
	ts.URL, ts.Echo, ts.http, ts.Registry = srv.URL, e, srv.Client(), reg
	ts.Rec.Reset()
	return ts
}

// UniqueID returns a user ID unique within the server, e.g. "owner.3".
func (ts *testServer) UniqueID(prefix string) string {
	return fmt.Sprintf("%s.%d", prefix, ts.seq.Add(1))
}

// Token mints a valid HS256 bearer token (one hour) for sub.
func (ts *testServer) Token(tb testing.TB, sub, email, name string) string {
	tb.Helper()
	now := ts.Clock.Now()
	return ts.mint(tb, httpapi.Claims{Email: email, Name: name, RegisteredClaims: jwt.RegisteredClaims{
		Subject: sub, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}})
}

func (ts *testServer) mint(tb testing.TB, c httpapi.Claims) string {
	tb.Helper()
	tok, err := httpapi.MintHS256(testSecret, c)
	if err != nil {
		tb.Fatalf("mint: %v", err)
	}
	return tok
}

// HTTPClient returns an http.Client that sends token (when not empty) and
// validates every response against openapi.yaml.
func (ts *testServer) HTTPClient(tb testing.TB, token string) *http.Client {
	_, router := loadSpec(tb)
	return &http.Client{Transport: &validatingTransport{tb: tb, ts: ts, base: ts.http.Transport, router: router, token: token}}
}

// Client returns the generated client for the server, acting with token
// ("" sends no Authorization header). Every response is validated against
// openapi.yaml; a mismatch fails tb.
func (ts *testServer) Client(tb testing.TB, token string) *client.ClientWithResponses {
	tb.Helper()
	c, err := client.NewClientWithResponses(ts.URL, client.WithHTTPClient(ts.HTTPClient(tb, token)))
	if err != nil {
		tb.Fatalf("client: %v", err)
	}
	return c
}

// validatingTransport checks each response with kin-openapi's
// openapi3filter.ValidateResponse (undocumented statuses included), and
// every problem for the fields the API promises.
type validatingTransport struct {
	tb     testing.TB
	ts     *testServer
	base   http.RoundTripper
	router routers.Router
	token  string
}

// tbKey carries, in a request's context, the test to fail instead of the
// one the client was made for (a subtest, for precise reports).
type tbKey struct{}

func (v *validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tb := v.tb
	if t, ok := req.Context().Value(tbKey{}).(testing.TB); ok {
		tb = t
	}
	if v.token != "" && req.Header.Get("Authorization") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+v.token)
	}
	resp, err := v.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return resp, err
	}
	what := fmt.Sprintf("%s %s -> %d", req.Method, req.URL.RequestURI(), resp.StatusCode)
	if resp.StatusCode >= 400 {
		checkProblem(tb, what, resp, body)
	}
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		// Not an operation of the spec (a routing test): only Echo's own
		// not-found/method-not-allowed answers are acceptable.
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			tb.Errorf("%s: request matches no operation of openapi.yaml (%v) but was answered", what, err)
		}
		return resp, nil
	}
	v.ts.record(route.Operation.OperationID, resp.StatusCode)
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		tb.Errorf("%s (%s): response does not match openapi.yaml: %v\nbody: %s", what, route.Operation.OperationID, err, truncate(body))
	}
	return resp, nil
}

// checkProblem asserts an error response is RFC 9457 problem+json with
// every field the API promises.
func checkProblem(tb testing.TB, what string, resp *http.Response, body []byte) {
	tb.Helper()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != problemJSON {
		tb.Errorf("%s: content type %q, want %s", what, resp.Header.Get("Content-Type"), problemJSON)
		return
	}
	var p map[string]any
	if err := json.Unmarshal(body, &p); err != nil {
		tb.Errorf("%s: problem is not JSON: %v: %s", what, err, truncate(body))
		return
	}
	for _, f := range []string{"type", "title", "detail", "code", "requestId"} {
		if s, _ := p[f].(string); s == "" {
			tb.Errorf("%s: problem field %q is missing or empty: %s", what, f, truncate(body))
		}
	}
	if got, want := p["status"], float64(resp.StatusCode); got != want {
		tb.Errorf("%s: problem status %v, want %v", what, got, want)
	}
	if got, want := p["requestId"], resp.Header.Get(echo.HeaderXRequestID); got != want {
		tb.Errorf("%s: problem requestId %v, want the X-Request-Id header %q", what, got, want)
	}
}

func truncate(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

// problemOf decodes a problem body.
func problemOf(tb testing.TB, body []byte) client.Problem {
	tb.Helper()
	var p client.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		tb.Fatalf("problem: %v: %s", err, body)
	}
	return p
}

// statusCoder is what every generated response has.
type statusCoder interface {
	StatusCode() int
	GetBody() []byte
}

// mustStatus fails now unless r has status want. r is a generated response.
func mustStatus(tb testing.TB, r statusCoder, err error, want int) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("request: %v", err)
	}
	if got := r.StatusCode(); got != want {
		tb.Fatalf("status: got %d, want %d; body: %s", got, want, bodyOf(r))
	}
}

// wantProblem asserts status and problem code of a generated response.
func wantProblem(tb testing.TB, r statusCoder, err error, status int, code string) {
	tb.Helper()
	mustStatus(tb, r, err, status)
	p := problemOf(tb, bodyOf(r))
	if code != "" && p.Code != code {
		tb.Errorf("problem code: got %q, want %q (detail %q)", p.Code, code, p.Detail)
	}
}

func bodyOf(r statusCoder) []byte { return r.GetBody() }

// actor is a user with a token and a client.
type actor struct {
	ID, Email, Name string
	C               *client.ClientWithResponses
	HTTP            *http.Client
	Token           string
}

// Actor returns a new user with a unique ID (prefix.N) and a client.
func (ts *testServer) Actor(tb testing.TB, prefix string) actor {
	tb.Helper()
	return ts.ActorWithID(tb, ts.UniqueID(prefix))
}

// ActorWithID returns the user id with a unique email and a client.
func (ts *testServer) ActorWithID(tb testing.TB, id string) actor {
	tb.Helper()
	a := actor{ID: id, Email: fmt.Sprintf("user-%d@example.com", ts.seq.Add(1)), Name: "Name of " + id}
	a.Token = ts.Token(tb, a.ID, a.Email, a.Name)
	a.C = ts.Client(tb, a.Token)
	a.HTTP = ts.HTTPClient(tb, a.Token)
	return a
}

// Invitee returns a new actor whose token carries email: the one an
// invitation was sent to, which accepting it requires.
func (ts *testServer) Invitee(tb testing.TB, prefix, email string) actor {
	tb.Helper()
	a := actor{ID: ts.UniqueID(prefix), Email: email}
	a.Name = "Name of " + a.ID
	a.Token = ts.Token(tb, a.ID, a.Email, a.Name)
	a.C = ts.Client(tb, a.Token)
	a.HTTP = ts.HTTPClient(tb, a.Token)
	return a
}

// MustOrg creates an org as c's user (who becomes its owner).
func MustOrg(tb testing.TB, c *client.ClientWithResponses, name string) client.Org {
	tb.Helper()
	r, err := c.CreateOrgWithResponse(context.Background(), nil, client.OrgCreate{Name: name})
	mustStatus(tb, r, err, http.StatusCreated)
	return *r.JSON201
}

// MustUser adds a to the org with role, as c's user.
func MustUser(tb testing.TB, c *client.ClientWithResponses, orgID string, a actor, role client.Role) client.OrgUser {
	tb.Helper()
	r, err := c.AddOrgUserWithResponse(context.Background(), orgID, nil, client.OrgUserCreate{UserId: a.ID, Email: a.Email, Name: a.Name, Role: role})
	mustStatus(tb, r, err, http.StatusCreated)
	return *r.JSON201
}

// MustTeam creates a team as c's user (who becomes its owner).
func MustTeam(tb testing.TB, c *client.ClientWithResponses, orgID, name string) client.Team {
	tb.Helper()
	desc := "about " + name
	r, err := c.CreateTeamWithResponse(context.Background(), orgID, nil, client.TeamCreate{Name: name, Description: &desc})
	mustStatus(tb, r, err, http.StatusCreated)
	return *r.JSON201
}

// MustMember puts userID into the team with role, as c's user.
func MustMember(tb testing.TB, c *client.ClientWithResponses, orgID, teamID, userID string, role client.Role) client.Membership {
	tb.Helper()
	r, err := c.PutTeamMemberWithResponse(context.Background(), orgID, teamID, userID, nil, client.TeamMemberPut{Role: role})
	if err != nil {
		tb.Fatal(err)
	}
	switch r.StatusCode() {
	case http.StatusCreated:
		return *r.JSON201
	case http.StatusOK:
		return *r.JSON200
	}
	tb.Fatalf("put member: status %d: %s", r.StatusCode(), r.Body)
	return client.Membership{}
}

// MustTicket opens a ticket as c's user.
func MustTicket(tb testing.TB, c *client.ClientWithResponses, orgID string, in client.TicketCreate) client.Ticket {
	tb.Helper()
	r, err := c.CreateTicketWithResponse(context.Background(), orgID, nil, in)
	mustStatus(tb, r, err, http.StatusCreated)
	return *r.JSON201
}

// memberCount is a team's memberCount, read as c's user.
func memberCount(tb testing.TB, c *client.ClientWithResponses, orgID, teamID string) int {
	tb.Helper()
	r, err := c.GetTeamWithResponse(bg, orgID, teamID, nil)
	mustStatus(tb, r, err, http.StatusOK)
	return r.JSON200.MemberCount
}

// MustComment comments on a ticket as c's user.
func MustComment(tb testing.TB, c *client.ClientWithResponses, orgID, ticketID, body string) client.Comment {
	tb.Helper()
	r, err := c.CreateCommentWithResponse(context.Background(), orgID, ticketID, nil, client.CommentCreate{Body: body})
	mustStatus(tb, r, err, http.StatusCreated)
	return *r.JSON201
}

// MustInvitation invites email to the org as c's user.
func MustInvitation(tb testing.TB, c *client.ClientWithResponses, orgID, email string, role client.Role, teamIDs ...string) client.InvitationCreated {
	tb.Helper()
	in := client.InvitationCreate{Email: email, Role: role}
	if len(teamIDs) > 0 {
		in.TeamIds = &teamIDs
	}
	r, err := c.CreateInvitationWithResponse(context.Background(), orgID, nil, in)
	mustStatus(tb, r, err, http.StatusCreated)
	return *r.JSON201
}

// world is one org with a user in every role the policy knows:
// Owner/Admin/Member by org role; TeamOwner/TeamAdmin/TeamMember are org
// members with that role on Team; Requester opened Ticket (routed to Team)
// and Assignee is assigned it (both org members, in no team).
type world struct {
	Org    client.Org
	Team   client.Team
	Ticket client.Ticket

	Owner, Admin, Member             actor
	TeamOwner, TeamAdmin, TeamMember actor
	Requester, Assignee              actor
}

// MustWorld builds a world named name in ts.
func MustWorld(tb testing.TB, ts *testServer, name string) *world {
	tb.Helper()
	w := &world{
		Owner: ts.Actor(tb, "owner"), Admin: ts.Actor(tb, "admin"), Member: ts.Actor(tb, "member"),
		TeamOwner: ts.Actor(tb, "towner"), TeamAdmin: ts.Actor(tb, "tadmin"), TeamMember: ts.Actor(tb, "tmember"),
		Requester: ts.Actor(tb, "req"), Assignee: ts.Actor(tb, "asg"),
	}
	oc := w.Owner.C
	w.Org = MustOrg(tb, oc, name)
	MustUser(tb, oc, w.Org.Id, w.Admin, client.RoleAdmin)
	for _, a := range []actor{w.Member, w.TeamOwner, w.TeamAdmin, w.TeamMember, w.Requester, w.Assignee} {
		MustUser(tb, oc, w.Org.Id, a, client.RoleMember)
	}
	w.Team = MustTeam(tb, oc, w.Org.Id, name+" Support")
	MustMember(tb, oc, w.Org.Id, w.Team.Id, w.TeamOwner.ID, client.RoleOwner)
	MustMember(tb, oc, w.Org.Id, w.Team.Id, w.TeamAdmin.ID, client.RoleAdmin)
	MustMember(tb, oc, w.Org.Id, w.Team.Id, w.TeamMember.ID, client.RoleMember)
	w.Ticket = MustTicket(tb, w.Requester.C, w.Org.Id, client.TicketCreate{Title: name + " printer on fire",
		TeamId: &w.Team.Id, AssigneeId: &w.Assignee.ID, Tags: &[]string{"hardware"}})
	return w
}

// worldSnapshot is what the world's owner reads of it: the org with its
// users, the team with its members, the teams, the tickets, the ticket
// with its comments, the owner's orgs and the invitations. A refused
// request leaves it as it was.
func worldSnapshot(t *testing.T, w *world) string {
	t.Helper()
	org, owner := w.Org.Id, w.Owner.C
	var b strings.Builder
	g, err := owner.GetOrgWithResponse(bg, org, &client.GetOrgParams{Include: ptr(client.GetOrgParamsIncludeUsers)})
	mustStatus(t, g, err, http.StatusOK)
	b.Write(g.Body)
	tm, err := owner.GetTeamWithResponse(bg, org, w.Team.Id, &client.GetTeamParams{Include: ptr(client.GetTeamParamsIncludeMembers)})
	mustStatus(t, tm, err, http.StatusOK)
	b.Write(tm.Body)
	lt, err := owner.ListTeamsWithResponse(bg, org, nil)
	mustStatus(t, lt, err, http.StatusOK)
	b.Write(lt.Body)
	tk, err := owner.ListTicketsWithResponse(bg, org, nil)
	mustStatus(t, tk, err, http.StatusOK)
	b.Write(tk.Body)
	c, err := owner.GetTicketWithResponse(bg, org, w.Ticket.Id, &client.GetTicketParams{Include: ptr(client.GetTicketParamsIncludeComments)})
	mustStatus(t, c, err, http.StatusOK)
	b.Write(c.Body)
	o, err := owner.ListOrgsWithResponse(bg, nil)
	mustStatus(t, o, err, http.StatusOK)
	b.Write(o.Body)
	inv, err := owner.ListInvitationsWithResponse(bg, org, nil)
	mustStatus(t, inv, err, http.StatusOK)
	b.Write(inv.Body)
	return b.String()
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

var bg = context.Background()

// wantETag asserts the ETag names version: "<version>-<digest>".
func wantETag(tb testing.TB, h http.Header, version int64) {
	tb.Helper()
	if got := h.Get("ETag"); !regexp.MustCompile(fmt.Sprintf(`^"%d-[0-9a-f]{16}"$`, version)).MatchString(got) {
		tb.Errorf("ETag: got %q, want \"%d-<digest>\"", got, version)
	}
}

// etagOf is the ETag the API promises for a version.
func etagOf(version int64) string { return fmt.Sprintf("%q", fmt.Sprint(version)) }

// mustHealthy fails tb with every invariant the server's table breaks.
func mustHealthy(tb testing.TB, ts *testServer) {
	tb.Helper()
	vs, err := storetest.CheckInvariants(context.Background(), ts.Raw, ts.Table, storetest.CheckOptions{Now: time.Now().Add(365 * 24 * time.Hour)})
	if err != nil {
		tb.Fatalf("check invariants: %v", err)
	}
	for i, v := range vs {
		if i == 20 {
			tb.Errorf("... and %d more violations", len(vs)-20)
			break
		}
		tb.Errorf("invariant: %s", v)
	}
}

// decodeJSON unmarshals a JSON response body into v.
func decodeJSON(tb testing.TB, body []byte, v any) {
	tb.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		tb.Fatalf("decode %s: %v", truncate(body), err)
	}
}
