// Package graphapi is tenantd's GraphQL API (/v1/graphql, POST and GET):
// the reads of the REST API and three of its writes, schema-first with
// gqlgen, over the same domain services, with Relay connections. httpapi
// authenticates the request, hands it to Server.Execute and answers it.
//
// A nested query costs one DynamoDB operation (or one round of concurrent
// Queries) per nesting level, never one per item: per-request DataLoaders
// batch a level's lookups (docs/data-model.md, "GraphQL: operations per
// level"). Authorization is the REST API's, read once per org per request;
// another tenant's org is org_not_found.
package graphapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/apikey"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/idempotency"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/ratelimit"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
	"github.com/tenantd/tenantd/internal/webhook"
)

// Services are the domain services both APIs call and the authorization
// read they decide with (httpapi's Deps embeds them).
type Services struct {
	Orgs        *tenant.Service
	Teams       *membership.Service
	Tickets     *ticket.Service
	Invitations *invitation.Service
	Audit       *audit.Service
	Webhooks    *webhook.Service
	Deliveries  *webhook.Deliveries
	APIKeys     *apikey.Service
	Access      access.Reader
}

// Deps are what the resolvers use: the REST API's services and settings.
type Deps struct {
	Services
	// Cursors signs the connections' cursors: the REST API's.
	Cursors page.Cursors
	// RateLimit, when set, is REST's per-org limit: a request spends its
	// cost (costPerToken) from each org it reads.
	RateLimit *ratelimit.Limiter
	// CallerRateLimit, when set, is the REST API's per-caller limit, which
	// spent one token on the request before it got here: a costlier request
	// spends the rest of its cost from it too, before it runs.
	CallerRateLimit *ratelimit.Limiter
	// Idempotency, when set, is REST's keeper of idempotencyKey's IDs.
	Idempotency *idempotency.Keeper
	// CheckInput checks value as the REST API checks field of the body
	// schema ("TicketCreate"): the problems REST would list, none when it
	// passes.
	CheckInput func(schema, field string, value any) []FieldError
	Now        clock.Clock
	Logger     *slog.Logger
	Limits     Limits
	// KeyUse, when set, remembers the API keys in use (apikey.Recent).
	KeyUse *apikey.Recent
}

// Limits bound what one request may cost. Zero values take the defaults.
type Limits struct {
	// MaxDepth is the deepest selection allowed (default 10; the
	// introspection fields do not count).
	MaxDepth int
	// MaxComplexity is the most a query may cost (default 10,000; the
	// costs are setComplexity's).
	MaxComplexity int
	// BatchWait is how long a DataLoader collects the lookups of a level
	// before it reads them (default 2 ms).
	BatchWait time.Duration
	// Introspection allows __schema and __type (on in dev, off by default).
	Introspection bool
}

// The fixed bounds of a request.
const (
	maxOrgs              = 10    // distinct orgs one request may read: each costs an authorization read
	costPerToken         = 100   // complexity one rate-limit token pays for, in each org a request reads
	maxConcurrentQueries = 16    // DynamoDB calls a request's resolvers make at once (requestState.calls)
	cacheSize            = 256   // parsed documents, and persisted queries, kept
	parserTokenLimit     = 5_000 // tokens of a query document
)

// Server runs GraphQL requests.
type Server struct {
	d    Deps
	exec *executor.Executor
}

// New returns a Server over d.
func New(d Deps) *Server {
	if d.Limits.MaxDepth <= 0 {
		d.Limits.MaxDepth = 10
	}
	if d.Limits.MaxComplexity <= 0 {
		d.Limits.MaxComplexity = 10_000
	}
	if d.Limits.BatchWait <= 0 {
		d.Limits.BatchWait = 2 * time.Millisecond
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{d: d}
	cfg := Config{Resolvers: &resolver{s}}
	setComplexity(&cfg.Complexity)
	e := executor.New(NewExecutableSchema(cfg))
	e.SetQueryCache(lru.New[*ast.QueryDocument](cacheSize))
	e.SetParserTokenLimit(parserTokenLimit)
	e.SetErrorPresenter(s.presentError)
	e.SetRecoverFunc(func(ctx context.Context, v any) error {
		d.Logger.ErrorContext(ctx, "graphql: resolver panic", "panic", fmt.Sprint(v))
		return errInternal
	})
	if d.Limits.Introspection {
		e.Use(extension.Introspection{})
	}
	// Without introspection, validation errors do not suggest names
	// ("Did you mean ...?") either: they would spell the schema out.
	e.SetDisableSuggestion(!d.Limits.Introspection)
	e.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](cacheSize)})
	// After APQ (which fills in the query of a hash), before validation.
	e.Use(&documentCheck{maxFields: d.Limits.MaxComplexity, passed: lru.New[struct{}](cacheSize)})
	e.Use(depthLimit{max: d.Limits.MaxDepth})
	e.Use(extension.FixedComplexityLimit(d.Limits.MaxComplexity))
	s.exec = e
	return s
}

// Request is one GraphQL-over-HTTP request body.
type Request struct {
	Query         string
	OperationName string
	Variables     map[string]any // numbers as json.Number
	Extensions    map[string]any
	// QueryOnly refuses any operation but a query (GET): Execute runs
	// nothing and says NotAQuery.
	QueryOnly bool
}

// Result is a request's answer and what it was, for the request's log line
// and metrics.
type Result struct {
	Response *graphql.Response
	// Operation is "<query|mutation>:<root fields>", sorted and joined by
	// "+": a bounded set, fit for a metric label ("" for no operation).
	Operation string
	// Limited, when set, is the caller's rate limit refusing the request's
	// cost: nothing ran, Response is nil.
	Limited *ratelimit.Decision
	// Executed is whether the operation ran: false for a request error,
	// whose Response has errors and no data.
	Executed bool
	// NotAQuery is a mutation in a QueryOnly request: Response is nil.
	NotAQuery bool
}

// Execute runs r for the caller; request and field errors are in the
// response's errors, with extensions.code. Nothing reads DynamoDB before
// the document has passed every limit.
func (s *Server) Execute(ctx context.Context, id authz.Identity, r Request) Result {
	rs := &requestState{s: s, id: id, queryOnly: r.QueryOnly, access: map[string]*accessEntry{}, calls: make(chan struct{}, maxConcurrentQueries)}
	rs.loaders = newLoaders(rs)
	ctx = context.WithValue(ctx, stateKey{}, rs)
	params := &graphql.RawParams{Query: r.Query, OperationName: r.OperationName, Variables: r.Variables, Extensions: r.Extensions,
		ReadTime: graphql.TraceTiming{Start: graphql.Now(), End: graphql.Now()}}
	ctx = graphql.StartOperationTrace(ctx)
	rc, errList := s.exec.CreateOperationContext(ctx, params)
	if rs.notAQuery {
		return Result{NotAQuery: true}
	}
	if errList != nil {
		return Result{Response: s.exec.DispatchError(graphql.WithOperationContext(ctx, rc), errList)}
	}
	res := Result{Operation: operationLabel(rc)}
	complexity := 0 // the operation's cost as the limit counts it
	if st := extension.GetComplexityStats(graphql.WithOperationContext(ctx, rc)); st != nil {
		complexity = st.Complexity
	}
	rs.cost = max(1, (complexity+costPerToken-1)/costPerToken)
	if rs.cost > 1 && !s.d.CallerRateLimit.Off() && s.d.CallerRateLimit.Burst() > 1 {
		// (At most the burst in all, so a costly request waits for a full
		// bucket, never forever.)
		if d := s.d.CallerRateLimit.TakeN(ctx, "caller:"+id.Caller(), min(rs.cost, s.d.CallerRateLimit.Burst())-1); !d.Allowed {
			res.Limited = &d
			return res
		}
	}
	responses, ctx := s.exec.DispatchOperation(ctx, rc)
	res.Response, res.Executed = responses(ctx), true
	return res
}

var errInternal = errors.New("internal error")

// presentError turns a resolver's error into a GraphQL error whose
// extensions carry the REST API's code (and its field errors); an internal
// error is logged and said no more of.
func (s *Server) presentError(ctx context.Context, err error) *gqlerror.Error {
	// gqlgen's own errors (the resolvers return errs errors) pass as they
	// are, with a code when they have none.
	_, ours := errs.As(err)
	var ie inputError
	ours = ours || errors.As(err, &ie) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
	var gqlErr *gqlerror.Error
	if !ours && errors.As(err, &gqlErr) {
		if gqlErr.Extensions["code"] == nil {
			code := "GRAPHQL_EXECUTION_FAILED"
			if gqlErr.Message == "introspection disabled" {
				code = "INTROSPECTION_DISABLED"
			}
			errcode.Set(gqlErr, code)
		}
		if gqlErr.Path == nil {
			gqlErr.Path = graphql.GetPath(ctx)
		}
		return gqlErr
	}
	out := graphql.DefaultErrorPresenter(ctx, err)
	ext, msg, internal := errorExtensions(err)
	if internal {
		s.d.Logger.ErrorContext(ctx, "graphql: field failed", "path", out.Path.String(), "err", err.Error())
	}
	out.Message, out.Extensions = msg, ext
	return out
}

// operationLabel names an operation by its type and root fields.
func operationLabel(rc *graphql.OperationContext) string {
	if rc == nil || rc.Operation == nil {
		return ""
	}
	var names []string
	for _, f := range graphql.CollectFields(rc, rc.Operation.SelectionSet, nil) {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return string(rc.Operation.Operation) + ":" + strings.Join(slices.Compact(names), "+")
}
