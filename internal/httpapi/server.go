// Package httpapi is tenantd's HTTP surface: the Echo server generated from
// openapi.yaml (strict handlers), request validation against the spec,
// authentication and the O(1) org authorization read, signed cursors, and
// the single error handler that speaks RFC 9457 problem+json.
package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantd/tenantd/internal/apikey"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/export"
	"github.com/tenantd/tenantd/internal/graphapi"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/idempotency"
	"github.com/tenantd/tenantd/internal/obs"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/ratelimit"
)

// defineFormats registers kin-openapi's (global) string formats once, so
// building several servers in one process never races with validation.
var defineFormats sync.Once

// MaxBodyBytes is the largest request body accepted.
const MaxBodyBytes = 64 << 10

const (
	cursorTTL = 24 * time.Hour // how long a pagination cursor stays valid
	// offboardTimeout bounds DELETE /v1/orgs/{orgId}, which cuts every
	// member of a tenant off before it answers.
	offboardTimeout = 2 * time.Minute
)

// Deps are what the server is wired from.
type Deps struct {
	graphapi.Services
	Verifier *Verifier
	// CursorKey signs pagination cursors (at least 32 bytes).
	CursorKey []byte
	Logger    *slog.Logger
	Now       clock.Clock
	// Ready reports whether the server should get traffic (DynamoDB
	// reachable, not shutting down); nil means always ready.
	Ready func(context.Context) error
	// Registry collects the request metrics; nil means a fresh registry.
	Registry *prometheus.Registry
	// Metrics, when set, counts each request's DynamoDB calls (attach
	// Metrics.DynamoDB to the SDK client) and writes its log line.
	Metrics *obs.Metrics
	// RateLimit, when set, limits each tenant's request rate.
	RateLimit *ratelimit.Limiter
	// CallerRateLimit, when set, limits each caller's (token subject's)
	// request rate before the authorization read, whatever org it names.
	CallerRateLimit *ratelimit.Limiter
	// Idempotency, when set, keeps replayable responses of creating POSTs
	// sent with an Idempotency-Key.
	Idempotency idempotency.Storer
	// KeyUse, when set, remembers the API keys in use (apikey.Recent).
	KeyUse *apikey.Recent
	// RequestTimeout bounds each request, DynamoDB calls included
	// (default 10 s); a request that runs out answers 503.
	RequestTimeout time.Duration
	// OffboardWait is how long DELETE /v1/orgs/{orgId} waits for the
	// offboarding before it answers 202 (default 2 s).
	OffboardWait time.Duration
	// GraphQL bounds the GraphQL API's requests (zero: its defaults).
	GraphQL graphapi.Limits
	// Export exports orgs (GET /v1/orgs/{orgId}/export).
	Export *export.Service
	// Tracing, when set, traces every request, its DynamoDB calls (attach
	// Tracing.DynamoDB to the SDK client) and its GraphQL levels.
	Tracing *obs.Tracing
	// DocsUI serves GET /docs and GraphiQL (docs.go).
	DocsUI bool
	// WriteTimeout is the http.Server's WriteTimeout (0: it has none),
	// which timeout pushes out for the offboarding DELETE.
	WriteTimeout time.Duration
}

// inFlight is the longest a request's write may take to commit once its
// request began: its deadline, and a margin for a write already sent.
func (d Deps) inFlight() time.Duration { return d.RequestTimeout + 5*time.Second }

// New returns the Echo server with every route of openapi.yaml.
func New(d Deps) (*echo.Echo, error) {
	if len(d.CursorKey) < 32 {
		return nil, fmt.Errorf("httpapi: cursor key must be at least 32 bytes")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if d.RequestTimeout == 0 {
		d.RequestTimeout = 10 * time.Second
	}
	if d.OffboardWait == 0 {
		d.OffboardWait = 2 * time.Second
	}
	spec, err := oapi.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("httpapi: load spec: %w", err)
	}
	spec.Servers = nil
	defineFormats.Do(func() {
		openapi3.DefineStringFormatValidator("email", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForEmail))
	})

	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	public := publicPaths(spec)
	if d.DocsUI {
		public[DocsRoute], public[DocsAssetsRoute] = true, true
	}
	// The route templates, once every route is registered (below): the
	// only paths a metric label or a log line may carry.
	routes := map[string]bool{}
	route := func(c echo.Context) string {
		if p := c.Path(); routes[p] {
			return p
		}
		return obs.Unmatched
	}

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = errorHandler(d.Logger)
	e.Use(withRequest)
	e.Use(allowHead)
	e.Use(noStore)
	e.Use(requestID)
	if d.Tracing != nil {
		e.Use(traceRequests(d.Tracing, route)...) // outside the log line, which names the trace
	}
	// Outermost of the metrics: it renders errors (c.Error) before counting,
	// so it counts what the client got.
	e.Use(countRequests(obs.NewHTTP(d.Registry), route))
	if d.Metrics != nil {
		e.Use(logRequests(d.Metrics, d.Logger, route))
	}
	e.Use(middleware.Recover())
	e.Use(middleware.BodyLimit(fmt.Sprint(MaxBodyBytes/1024) + "KiB")) // "K" would be 64,000 bytes
	e.Use(timeout(d.RequestTimeout, d.WriteTimeout))
	if d.DocsUI {
		e.Use(graphiQL) // a browser's page, before any token is asked for
	}
	// Public operations, and paths that match no route (a 404 whoever
	// asks; the spec says which routes exist), need no token.
	e.Use(Authenticate(d.Verifier, d.APIKeys, d.KeyUse, func(c echo.Context) bool { return public[c.Path()] || route(c) == obs.Unmatched }))
	// Before the authorization read: a token that names other tenants'
	// orgs spends only its own budget.
	e.Use(limitCaller(d.CallerRateLimit))
	// An API key is read in its org right after it spent its budget, before
	// anything refuses its request in CPU: a revoked key is found out, and
	// remembered, at its first request that costs its org's keys anything.
	authorizer := Authorizer{Reader: d.Access, ReadTimeout: d.RequestTimeout, Now: d.Now, Keys: d.KeyUse, ForKeys: true}
	e.Use(AuthorizeOrg(authorizer))
	// What the head alone decides (404, 405, 415), before anything reads
	// the body: a client waiting for 100 Continue gets it instead.
	ops := operations(spec)
	e.Use(beforeBody(ops))
	// One JSON value, valid UTF-8, no key twice: before anything decodes it.
	e.Use(strictJSON)
	e.Use(validateRequests(ops))
	authorizer.ForKeys = false // people: once their request is valid
	e.Use(AuthorizeOrg(authorizer))
	// After the authorization read: only an org's members spend its quota,
	// so nobody can exhaust another tenant's limit.
	e.Use(limitTenant(d.RateLimit))
	// Past its request's deadline and a margin, an attempt's key may be
	// taken over.
	var keeper *idempotency.Keeper
	if d.Idempotency != nil {
		keeper = idempotency.NewKeeper(d.Idempotency, idempotency.Options{Now: d.Now, StaleAfter: d.inFlight()})
		e.Use(idempotent(keeper))
	}
	// Innermost: entity tags of representations, and If-None-Match.
	e.Use(conditional)

	h := &handlers{Deps: d, cursors: page.Cursors{Key: d.CursorKey, TTL: cursorTTL, Now: clock.Or(d.Now)}, exports: exports{n: map[string]int{}}}
	h.graphQL = graphapi.New(graphapi.Deps{Services: d.Services, Cursors: h.cursors, RateLimit: d.RateLimit, CallerRateLimit: d.CallerRateLimit, Idempotency: keeper, CheckInput: checkInput(spec), Now: d.Now, Logger: d.Logger, Limits: d.GraphQL, KeyUse: d.KeyUse})
	if d.Tracing != nil {
		h.graphQL.Trace(d.Tracing.Tracer("github.com/tenantd/tenantd/internal/graphapi"))
	}
	oapi.RegisterHandlers(e, oapi.NewStrictHandler(h, nil))
	if d.DocsUI {
		registerDocs(e)
	}
	for _, r := range e.Routes() {
		routes[r.Path] = true
	}
	return e, nil
}

// HeadAsGet serves a HEAD as the GET of the same URL (RFC 9110 9.3.2):
// the server handles a copy of the request whose method is GET, and
// net/http, whose request stays a HEAD, sends no content.
func HeadAsGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			r = r.WithContext(context.WithValue(r.Context(), headKey{}, true))
			r.Method = http.MethodGet
		}
		next.ServeHTTP(w, r)
	})
}

type headKey struct{}

// isHead reports whether the request is a HEAD served as its GET: a
// streamed answer (an export) sends its header fields and reads nothing.
func isHead(ctx context.Context) bool {
	head, _ := ctx.Value(headKey{}).(bool)
	return head
}

// allowHead adds HEAD to an Allow header that lists GET: HeadAsGet serves
// HEAD on every GET route, which Echo's router never sees.
func allowHead(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		res := c.Response()
		res.Before(func() {
			allow := strings.Split(res.Header().Get(echo.HeaderAllow), ", ")
			if slices.Contains(allow, http.MethodGet) && !slices.Contains(allow, http.MethodHead) {
				res.Header().Set(echo.HeaderAllow, strings.Join(append(allow, http.MethodHead), ", "))
			}
		})
		return next(c)
	}
}

// noStore marks every answer to a request that is not a GET
// Cache-Control: no-store: the answers that show a secret (an API key's, a
// webhook's, an invitation's token) are writes' answers.
func noStore(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Method != http.MethodGet {
			c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
		}
		return next(c)
	}
}

// publicPaths are the Echo paths of operations the spec marks `security: []`.
func publicPaths(spec *openapi3.T) map[string]bool {
	out := map[string]bool{}
	for path, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			if op.Security != nil && len(*op.Security) == 0 {
				out[path] = true
			}
		}
	}
	return out
}

// timeout gives each request a deadline that DynamoDB calls honour:
// requestTimeout, or offboardTimeout for the offboarding DELETE, whose
// write deadline (if any) moves out by the difference.
func timeout(requestTimeout, writeTimeout time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			limit := requestTimeout
			if c.Request().Method == http.MethodDelete && c.Path() == "/v1/orgs/:orgId" {
				limit = offboardTimeout
			}
			if extra := limit - requestTimeout; extra > 0 && writeTimeout > 0 {
				_ = http.NewResponseController(c.Response()).SetWriteDeadline(time.Now().Add(writeTimeout + extra))
			}
			ctx, cancel := context.WithTimeout(c.Request().Context(), limit)
			defer cancel()
			c.SetRequest(c.Request().WithContext(ctx))
			return next(c)
		}
	}
}

type requestKey struct{}

// withRequest keeps the request as net/http gave it in its context, under
// what later middlewares add (original): its URL, its Accept, and its
// context, which tells a client that went away (clientGone).
func withRequest(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), requestKey{}, r)))
		return next(c)
	}
}

// original is the request withRequest kept (an empty one without it).
func original(ctx context.Context) *http.Request {
	if r, ok := ctx.Value(requestKey{}).(*http.Request); ok {
		return r
	}
	return &http.Request{URL: &url.URL{}, Header: http.Header{}}
}
