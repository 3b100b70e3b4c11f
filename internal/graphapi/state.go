package graphapi

import (
	"context"
	"fmt"
	"sync"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
)

// requestState is one request's: the caller, the orgs it was authorized
// in, and its DataLoaders. Nothing in it outlives the request.
type requestState struct {
	s    *Server
	id   authz.Identity
	cost int // rate-limit tokens the request spends per org it reads
	// queryOnly refuses any operation but a query (Request.QueryOnly);
	// notAQuery says the document's operation was one.
	queryOnly, notAQuery bool

	mu      sync.Mutex
	access  map[string]*accessEntry
	loaders *loaders
	// calls bounds the DynamoDB calls the request's resolvers make at once
	// (maxConcurrentQueries): a page's nested listings run concurrently,
	// never all at once.
	calls chan struct{}
}

// accessEntry is the authorization of the caller in one org, decided once.
type accessEntry struct {
	once sync.Once
	d    access.Decision
	err  error
}

// do runs one service call (a DynamoDB call or a few) inside the request's
// concurrency bound. fn must not wait on a loader or on principal: it is
// the call itself.
func do[T any](ctx context.Context, rs *requestState, fn func() (T, error)) (T, error) {
	select {
	case rs.calls <- struct{}{}:
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
	defer func() { <-rs.calls }()
	return fn()
}

type stateKey struct{}

// state is the request's state, which Execute puts in the context of
// every resolver.
func state(ctx context.Context) *requestState {
	return ctx.Value(stateKey{}).(*requestState)
}

// principal is the caller acting in orgID: the REST API's authorization
// read and decision, made once per org per request; the org's rate limit
// is spent (the request's cost) only once the caller is known its member.
func (rs *requestState) principal(ctx context.Context, orgID string) (authz.Principal, error) {
	if err := ids.Resource("orgId", orgID); err != nil {
		return authz.Principal{}, err
	}
	rs.mu.Lock()
	e, ok := rs.access[orgID]
	if !ok {
		if len(rs.access) >= maxOrgs {
			rs.mu.Unlock()
			return authz.Principal{}, errs.E(errs.Invalid, "too_many_orgs", "one request may read at most %d organizations", maxOrgs)
		}
		e = &accessEntry{}
		rs.access[orgID] = e
	}
	rs.mu.Unlock()
	e.once.Do(func() { e.d, e.err = rs.authorize(ctx, orgID) })
	return e.d.Principal, e.err
}

// org is the org item as the authorization read in orgID found it (call
// principal first).
func (rs *requestState) org(orgID string) *tenant.Org {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.access[orgID].d.Org
}

func (rs *requestState) authorize(ctx context.Context, orgID string) (access.Decision, error) {
	d, err := access.Authorize(rs.id, orgID, access.Target{}, false, clock.Or(rs.s.d.Now)(), rs.s.d.KeyUse, func() (access.Found, error) {
		return do(ctx, rs, func() (access.Found, error) {
			return rs.s.d.Access.OrgAccess(ctx, orgID, rs.id.UserID, access.Target{})
		})
	})
	if err != nil {
		return access.Decision{}, err
	}
	if l := rs.s.d.RateLimit.TakeN(ctx, "org:"+orgID, rs.cost); !l.Allowed {
		return access.Decision{}, errLimited
	}
	return d, nil
}

// pageIn is the page a connection field asks for: first (1 to 100,
// default 25) and after, a cursor of this scope and listing.
func (rs *requestState) pageIn(scope, listing string, first *int, after *string) (page.Request, error) {
	pr := page.Request{Limit: page.DefaultLimit}
	if first != nil {
		if *first < 1 || *first > page.MaxLimit {
			return pr, errs.InvalidParam("first", "invalid_limit", "must be between 1 and %d", page.MaxLimit)
		}
		pr.Limit = *first
	}
	if after != nil {
		key, err := rs.s.d.Cursors.Decode(scope, listing, *after)
		if err != nil || *after == "" {
			return pr, errs.InvalidParam("after", "invalid_cursor", "the cursor is malformed, expired, or belongs to another listing")
		}
		pr.After = key
	}
	return pr, nil
}

// connectionOf wraps a page of a listing as a connection, each item's
// cursor its store position signed for this scope and listing.
func connectionOf[T, N any](rs *requestState, scope, listing string, r page.Result[T], node func(T) *N) (*Connection[N], error) {
	if len(r.After) != len(r.Items) {
		return nil, fmt.Errorf("listing %s: %d items, %d positions", listing, len(r.Items), len(r.After))
	}
	c := &Connection[N]{Edges: make([]*Edge[N], len(r.Items)), Nodes: make([]*N, len(r.Items)), PageInfo: &PageInfo{HasNextPage: r.Next != ""}}
	for i, it := range r.Items {
		n := node(it)
		c.Nodes[i] = n
		c.Edges[i] = &Edge[N]{Node: n, Cursor: rs.s.d.Cursors.Encode(scope, listing, r.After[i])}
	}
	if len(c.Edges) > 0 {
		c.PageInfo.StartCursor, c.PageInfo.EndCursor = &c.Edges[0].Cursor, &c.Edges[len(c.Edges)-1].Cursor
	}
	return c, nil
}

// connection fetches one page of a listing as a connection.
func connection[T, N any](ctx context.Context, scope, listing string, first *int, after *string,
	fetch func(page.Request) (page.Result[T], error), node func(T) *N) (*Connection[N], error) {
	rs := state(ctx)
	pr, err := rs.pageIn(scope, listing, first, after)
	if err != nil {
		return nil, err
	}
	r, err := do(ctx, rs, func() (page.Result[T], error) { return fetch(pr) })
	if err != nil {
		return nil, err
	}
	return connectionOf(rs, scope, listing, r, node)
}
