package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/apikey"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/ids"
)

// offboardingRoutes are the only routes of an org being offboarded that
// answer anything but 404, and only to its owners: repeating the DELETE and
// reading the offboarding's progress.
var offboardingRoutes = map[string]string{
	"/v1/orgs/:orgId":             http.MethodDelete,
	"/v1/orgs/:orgId/offboarding": http.MethodGet,
}

// targets are the routes that name one item, which the authorization read
// loads beside the caller's edge (access.Target): its GET, PATCH, PUT and
// DELETE find it in the request's decision, so that reading it costs no
// call of its own, and a missing one is a 404 from that one read; a
// listing under a named parent (a team's members, a user's tickets, a
// ticket's comments) loads its parent, so its 404 costs no call either. A
// GET with ?include= reads its item collection instead (the item and its
// children in one Query), so nothing is loaded for it; nor for a POST,
// whose transaction proves its parent. A team-scoped write
// loads the caller's edge of the team too, for rules that rest on their
// team role; a PUT of a team member may find none (it adds one).
var targets = map[string]func(c echo.Context) access.Target{
	"/v1/orgs/:orgId":                                func(echo.Context) access.Target { return access.Target{Kind: access.Org} },
	"/v1/orgs/:orgId/users/:userId":                  userTarget,
	"/v1/orgs/:orgId/users/:userId/teams":            userTarget,
	"/v1/orgs/:orgId/users/:userId/tickets":          userTarget,
	"/v1/orgs/:orgId/users/:userId/assigned-tickets": userTarget,
	"/v1/orgs/:orgId/teams/:teamId":                  teamTarget,
	"/v1/orgs/:orgId/teams/:teamId/members":          teamTarget,
	"/v1/orgs/:orgId/teams/:teamId/tickets":          teamTarget,
	"/v1/orgs/:orgId/tickets/:ticketId":              ticketTarget,
	"/v1/orgs/:orgId/tickets/:ticketId/comments":     ticketTarget,
	"/v1/orgs/:orgId/api-keys/:keyId": func(c echo.Context) access.Target {
		return access.Target{Kind: access.APIKey, KeyID: c.Param("keyId")}
	},
	"/v1/orgs/:orgId/teams/:teamId/members/:userId": func(c echo.Context) access.Target {
		return access.Target{Kind: access.Member, TeamID: c.Param("teamId"), UserID: c.Param("userId"), Optional: c.Request().Method == http.MethodPut}
	},
}

func userTarget(c echo.Context) access.Target {
	return access.Target{Kind: access.User, UserID: c.Param("userId")}
}

func teamTarget(c echo.Context) access.Target {
	return access.Target{Kind: access.Team, TeamID: c.Param("teamId")}
}

func ticketTarget(c echo.Context) access.Target {
	return access.Target{Kind: access.Ticket, TicketID: c.Param("ticketId")}
}

// Authenticate verifies the bearer token of every request that skip does
// not exempt (a person's JWT with v, an API key's token with keys, unless
// use saw its key gone, or outside its org: keyScope) and stores the
// Identity in the request context. A bad or missing token, or a second
// Authorization line, is a 401 before anything.
func Authenticate(v *Verifier, keys *apikey.Service, use *apikey.Recent, skip func(echo.Context) bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if skip != nil && skip(c) {
				return next(c)
			}
			hs := c.Request().Header.Values(echo.HeaderAuthorization)
			if len(hs) != 1 {
				return errToken
			}
			scheme, token, ok := strings.Cut(hs[0], " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") {
				return errToken
			}
			id, err := verify(c.Request().Context(), v, keys, strings.TrimSpace(token))
			if err != nil {
				return err
			}
			if id.Key != nil && use.Gone(*id.Key) {
				return authz.ErrKeyRevoked
			}
			if err := keyScope(c, id); err != nil {
				return err
			}
			req := c.Request()
			c.SetRequest(req.WithContext(WithIdentity(req.Context(), id)))
			return next(c)
		}
	}
}

// keyScope refuses an API key outside its own org in CPU, before it spends
// its org's keys' budget (a revoked key is found out only in its org):
// another org's routes are a 404, a person's a 403 (GraphQL decides its
// orgs itself).
func keyScope(c echo.Context, id authz.Identity) error {
	switch org := c.Param("orgId"); {
	case id.Key == nil:
	case org == "" && c.Path() != "/v1/graphql":
		return apikey.ErrNotAllowed
	case org != "" && access.Elsewhere(id, org):
		return authz.ErrOrgNotFound
	}
	return nil
}

// verify turns a bearer token into the caller's Identity: an org's API key
// (tdk_..., its MAC checked here, its hash against the key by the
// authorization read), or a person's JWT, whose subject may not be an API
// key's actor.
func verify(ctx context.Context, v *Verifier, keys *apikey.Service, token string) (authz.Identity, error) {
	k, isKey, err := keys.ParseToken(ctx, token)
	switch {
	case err != nil:
		return authz.Identity{}, err
	case isKey:
		return authz.Identity{UserID: apikey.Actor(k.ID), Key: &k}, nil
	}
	id, err := v.Verify(token)
	if err == nil && authz.KeyActor(id.UserID) {
		return authz.Identity{}, errToken
	}
	return id, err
}

// Authorizer is what AuthorizeOrg decides with.
type Authorizer struct {
	Reader access.Reader
	// ReadTimeout, when positive, bounds the authorization read on its
	// own: a route with a longer deadline (the offboarding DELETE) gives it
	// only to callers who turn out to be the org's, so a stranger's request
	// cannot be held for it while DynamoDB does not answer.
	ReadTimeout time.Duration
	Now         clock.Clock
	// Keys records the use of the API keys it admitted (nil: it does not).
	Keys *apikey.Recent
	// ForKeys decides for API keys only, else for people only (server.go
	// runs one of each).
	ForKeys bool
}

// AuthorizeOrg decides, once and before the handler runs, whether the
// caller may act in the org the route's :orgId names: it makes the one
// authorization read (access.Reader: the caller's edge, the org item, and
// the route's target when it names one), decides with access.Decide, and
// hands the handler the decision (decided). A refused caller, or a
// missing target, gets its 404 from that one call. Routes without :orgId
// pass through, but for an API key on GraphQL (keyScope refused it the
// others): it is read in its own org, and refused if revoked, and the
// operation decides its orgs itself. The ID is validated before any key
// is built.
func AuthorizeOrg(a Authorizer) echo.MiddlewareFunc {
	now := clock.Or(a.Now)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			id, ok := IdentityFrom(req.Context())
			if ok && (id.Key != nil) != a.ForKeys || !ok && a.ForKeys {
				return next(c) // the other one decides
			}
			orgID, graphql := c.Param("orgId"), false
			if orgID == "" && a.ForKeys {
				orgID, graphql = id.Key.OrgID, true
			}
			if orgID == "" {
				return next(c)
			}
			if err := ids.Resource("orgId", orgID); err != nil {
				return err
			}
			if !ok {
				return errToken
			}
			var t access.Target
			item := strings.HasSuffix(c.Path(), "Id") // the route of one item, not a listing under it
			if f, ok := targets[c.Path()]; ok && req.Method != http.MethodPost && !(item && c.QueryParams().Has("include")) {
				t = f(c)
				t.TeamRole = t.TeamID != "" && item && req.Method != http.MethodGet && req.Method != http.MethodHead
			}
			rctx := req.Context()
			if a.ReadTimeout > 0 {
				if a.ForKeys { // its bearer cannot hang up on the read that would find a key revoked
					rctx = context.WithoutCancel(rctx)
				}
				var cancel context.CancelFunc
				rctx, cancel = context.WithTimeout(rctx, a.ReadTimeout)
				defer cancel()
			}
			d, err := access.Authorize(id, orgID, t, offboardingRoutes[c.Path()] == req.Method, now(), a.Keys,
				func() (access.Found, error) { return a.Reader.OrgAccess(rctx, orgID, id.UserID, t) })
			if err != nil {
				return err
			}
			if !graphql {
				c.SetRequest(req.WithContext(access.WithDecision(req.Context(), d)))
			}
			return next(c)
		}
	}
}
