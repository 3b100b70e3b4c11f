package httpapi

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/idempotency"
	"github.com/tenantd/tenantd/internal/ids"
)

// AccessReader reads a user's access to an org: the authorization read.
type AccessReader interface {
	// OrgAccess reads the org item and the caller's OrgUser edge with ONE
	// consistent BatchGetItem. Returns NotFound if the org or the user's
	// membership of it does not exist.
	OrgAccess(ctx context.Context, orgID, userID string) (authz.Access, error)
}

// offboardingRoutes are the only routes of an org being offboarded that
// answer anything but 404, and only to its owners: repeating the DELETE and
// reading the offboarding's progress.
var offboardingRoutes = map[string]string{
	"/v1/orgs/:orgId":             http.MethodDelete,
	"/v1/orgs/:orgId/offboarding": http.MethodGet,
}

// writeFirstCreates are the creates any member may make whose services
// send their write beside the authorization read (authz.Write): the
// write's transaction proves the caller's membership itself (the actor
// fence). They go that way only for a caller the read has let into the
// org lately (recentMembers), so a stranger's create never sends a write
// that touches another tenant's items (a transaction evaluating, and on
// DynamoDB contending for, their ticket, team or user edge), nor lets its
// timing say whether they exist. One carrying an Idempotency-Key waits for
// the decision (its record is looked up in the caller's scope first).
var writeFirstCreates = map[string]bool{
	"/v1/orgs/:orgId/tickets":                    true,
	"/v1/orgs/:orgId/tickets/:ticketId/comments": true,
}

// The bound of recentMembers: at most twice this many (org, caller) pairs,
// each remembered one to two TTLs.
const (
	recentMembersMax = 1 << 16
	recentMembersTTL = 5 * time.Minute
)

// recentMembers remembers the (org, caller) pairs the authorization read
// let in lately, in two generations that rotate every ttl (or sooner, when
// the newer one holds max pairs), so memory stays bounded and only a
// member's request adds to it. It decides no access: only whether a
// member's create may send its write before the decision (which its
// transaction then proves).
type recentMembers struct {
	mu        sync.Mutex
	cur, prev map[memberKey]struct{}
	since     time.Time
	max       int
	ttl       time.Duration
}

// memberKey is one (org, caller) pair: a struct, so that every request's
// lookup builds no string.
type memberKey struct{ org, user string }

func newRecentMembers(max int, ttl time.Duration) *recentMembers {
	return &recentMembers{cur: map[memberKey]struct{}{}, prev: map[memberKey]struct{}{}, since: time.Now(), max: max, ttl: ttl}
}

func (m *recentMembers) rotate(now time.Time) {
	if now.Sub(m.since) >= 2*m.ttl {
		m.prev, m.cur, m.since = map[memberKey]struct{}{}, map[memberKey]struct{}{}, now
	} else if now.Sub(m.since) >= m.ttl || len(m.cur) >= m.max {
		m.prev, m.cur, m.since = m.cur, map[memberKey]struct{}{}, now
	}
}

func (m *recentMembers) saw(orgID, userID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rotate(time.Now())
	m.cur[memberKey{orgID, userID}] = struct{}{}
}

func (m *recentMembers) forget(orgID, userID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.cur, memberKey{orgID, userID})
	delete(m.prev, memberKey{orgID, userID})
}

func (m *recentMembers) recent(orgID, userID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rotate(time.Now())
	k := memberKey{orgID, userID}
	_, inCur := m.cur[k]
	_, inPrev := m.prev[k]
	return inCur || inPrev
}

// Authenticate verifies the bearer token of every request that skip does
// not exempt and stores the Identity in the request context. A bad or
// missing token ends the request with 401 before anything else runs.
func Authenticate(v *Verifier, skip func(echo.Context) bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if skip != nil && skip(c) {
				return next(c)
			}
			h := c.Request().Header.Get(echo.HeaderAuthorization)
			scheme, token, ok := strings.Cut(h, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") {
				return errToken
			}
			id, err := v.Verify(strings.TrimSpace(token))
			if err != nil {
				return err
			}
			req := c.Request()
			c.SetRequest(req.WithContext(WithIdentity(req.Context(), id)))
			return next(c)
		}
	}
}

// errNoOrg hides whether the org exists: a non-member sees the same 404 as
// for an org that was never created.
var errNoOrg = errs.E(errs.NotFound, "org_not_found", "organization not found")

// AuthorizeOrg loads the caller's role in the org named by the route's
// :orgId with ONE consistent BatchGetItem (the org item and the caller's
// OrgUser edge). Routes without :orgId pass through. The ID is validated
// before any key is built.
//
// A create (POST) waits for the read and finds the Principal in the
// request context. A GET, PATCH, PUT or DELETE does not wait: the read runs
// in the background and the request context carries an authz.Pending, so
// the handler's own first read (keyed by the same org) goes out beside it,
// one round trip instead of two; the service decides before it returns
// anything or writes (authz.Overlap, authz.Prefetch), and the request does
// not end before the authorization read has.
//
// readTimeout, when positive, bounds the authorization read on its own: a
// route with a longer deadline (the offboarding DELETE) gives it only to
// callers who turn out to be the org's, so a stranger's request cannot be
// held for it while DynamoDB does not answer.
func AuthorizeOrg(roles AccessReader, readTimeout time.Duration) echo.MiddlewareFunc {
	members := newRecentMembers(recentMembersMax, recentMembersTTL)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			orgID := c.Param("orgId")
			if orgID == "" {
				return next(c)
			}
			if err := ids.Resource("orgId", orgID); err != nil {
				return err
			}
			req := c.Request()
			id, ok := IdentityFrom(req.Context())
			if !ok {
				return errToken
			}
			rctx := req.Context()
			if readTimeout > 0 {
				var cancel context.CancelFunc
				rctx, cancel = context.WithTimeout(rctx, readTimeout)
				defer cancel()
			}
			// An org being offboarded exists for nobody, from the moment it
			// started, except that its owners may repeat the DELETE and
			// read its progress.
			offboarding := offboardingRoutes[c.Path()] == req.Method
			decide := func() (authz.Principal, error) {
				a, err := roles.OrgAccess(rctx, orgID, id.UserID)
				if errs.Is(err, errs.NotFound) {
					members.forget(orgID, id.UserID)
					return authz.Principal{}, errNoOrg
				}
				if err != nil {
					return authz.Principal{}, err
				}
				if (a.OrgDeleting || a.EdgeDeleting) && !(offboarding && a.Role == authz.Owner) {
					members.forget(orgID, id.UserID)
					return authz.Principal{}, authz.ErrOffboarding
				}
				members.saw(orgID, id.UserID)
				return authz.Principal{Identity: id, OrgID: orgID, OrgRole: a.Role}, nil
			}
			// A create waits for the decision (its idempotency record and
			// its write need the caller first), except the members' creates
			// whose transaction proves the caller's access (writeFirstCreates);
			// a read, an update or a delete gets the caller pending, and its
			// handler sends its first, small read beside the authorization
			// read (see authz.Pending): nothing is written, and nothing of
			// the target answered, before the decision.
			_, keyed := req.Header[http.CanonicalHeaderKey(idempotency.Header)]
			if req.Method == http.MethodPost && (keyed || !writeFirstCreates[c.Path()] || !members.recent(orgID, id.UserID)) {
				p, err := decide()
				if err != nil {
					return err
				}
				c.SetRequest(req.WithContext(WithPrincipal(req.Context(), p)))
				return next(c)
			}
			var (
				p    authz.Principal
				perr error
				done = make(chan struct{})
			)
			go func() {
				defer close(done)
				p, perr = decide()
			}()
			defer func() { <-done }()
			pend := authz.NewPending(id, orgID, func() (authz.Principal, error) {
				<-done
				return p, perr
			})
			c.SetRequest(req.WithContext(withPending(req.Context(), pend)))
			return next(c)
		}
	}
}
