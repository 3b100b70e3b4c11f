package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/graphapi"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/store"
)

// offboardingRoutes are the only routes of an org being offboarded that
// answer anything but 404, and only to its owners: repeating the DELETE and
// reading the offboarding's progress.
var offboardingRoutes = map[string]string{
	"/v1/orgs/:orgId":             http.MethodDelete,
	"/v1/orgs/:orgId/offboarding": http.MethodGet,
}

// targets are the routes that name one item, which the authorization read
// loads beside the caller's edge: its GET, PATCH, PUT and DELETE find it in
// the request's decision (decided), so that reading it costs no call of
// its own. A GET with ?include= reads its item collection instead (the
// item and its children in one Query), so nothing is loaded for it.
var targets = map[string]func(c echo.Context) *store.Target{
	"/v1/orgs/:orgId":                   func(echo.Context) *store.Target { return store.OrgTarget() },
	"/v1/orgs/:orgId/users/:userId":     func(c echo.Context) *store.Target { return store.OrgUserTarget(c.Param("userId")) },
	"/v1/orgs/:orgId/teams/:teamId":     func(c echo.Context) *store.Target { return store.TeamTarget(c.Param("teamId")) },
	"/v1/orgs/:orgId/tickets/:ticketId": func(c echo.Context) *store.Target { return store.TicketTarget(c.Param("ticketId")) },
	"/v1/orgs/:orgId/teams/:teamId/members/:userId": func(c echo.Context) *store.Target {
		return store.TeamMemberTarget(c.Param("teamId"), c.Param("userId"))
	},
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

// AuthorizeOrg decides, once and before the handler runs, whether the
// caller may act in the org the route's :orgId names: it makes the one
// authorization read (graphapi.AccessReader.OrgAccess, shared by both APIs: the caller's edge, the org
// item, and the route's target when it names one), decides with
// authz.Admit, and hands the handler the decision (decided). A refused
// caller gets its 404 from that one call: nothing else is read for it.
// Routes without :orgId pass through. The ID is validated before any key
// is built.
//
// readTimeout, when positive, bounds the authorization read on its own: a
// route with a longer deadline (the offboarding DELETE) gives it only to
// callers who turn out to be the org's, so a stranger's request cannot be
// held for it while DynamoDB does not answer.
func AuthorizeOrg(roles graphapi.AccessReader, readTimeout time.Duration) echo.MiddlewareFunc {
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
			var target *store.Target
			if t, ok := targets[c.Path()]; ok && req.Method != http.MethodPost && !c.QueryParams().Has("include") {
				target = t(c)
			}
			rctx := req.Context()
			if readTimeout > 0 {
				var cancel context.CancelFunc
				rctx, cancel = context.WithTimeout(rctx, readTimeout)
				defer cancel()
			}
			a, err := roles.OrgAccess(rctx, orgID, id.UserID, target)
			if err != nil {
				return err
			}
			p, err := authz.Admit(id, orgID, a, offboardingRoutes[c.Path()] == req.Method)
			if err != nil {
				return err
			}
			c.SetRequest(req.WithContext(withValue(req.Context(), decision{p: p, target: target})))
			return next(c)
		}
	}
}
