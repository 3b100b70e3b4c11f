package authz

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
)

// RoleReader reads a user's role in an org: the authorization read.
type RoleReader interface {
	// OrgRole returns the role on the OrgUser edge with one consistent
	// GetItem, and whether the org is being deleted (the edge of the owner
	// deleting it is marked). Returns NotFound if the user is not in the org.
	OrgRole(ctx context.Context, orgID, userID string) (role Role, deleting bool, err error)
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
// :orgId with ONE consistent GetItem on the OrgUser edge, and stores the
// Principal in the request context. Routes without :orgId pass through.
// The ID is validated before any key is built.
func AuthorizeOrg(roles RoleReader) echo.MiddlewareFunc {
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
			role, deleting, err := roles.OrgRole(req.Context(), orgID, id.UserID)
			if errs.Is(err, errs.NotFound) {
				return errNoOrg
			}
			if err != nil {
				return err
			}
			// An org being offboarded exists for nobody, except that the
			// owner deleting it may repeat the DELETE to finish the job.
			if deleting && !(req.Method == http.MethodDelete && c.Path() == "/v1/orgs/:orgId") {
				return errNoOrg
			}
			p := Principal{Identity: id, OrgID: orgID, OrgRole: role}
			c.SetRequest(req.WithContext(WithPrincipal(req.Context(), p)))
			return next(c)
		}
	}
}
