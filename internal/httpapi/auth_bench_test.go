package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/httpapi"
)

// memRoles is an access.Reader that answers from memory.
type memRoles struct{ role authz.Role }

func (m memRoles) OrgAccess(context.Context, string, string, access.Target) (access.Found, error) {
	return access.Found{Access: authz.Access{Role: m.role}}, nil
}

// benchContext is one reusable Echo context on an org route.
// serveLoop serves req with h on c in benchLoop.
func serveLoop(b *testing.B, h echo.HandlerFunc, c echo.Context, req *http.Request) {
	benchLoop(b, func() {
		c.SetRequest(req)
		if err := h(c); err != nil {
			b.Fatal(err)
		}
	})
}

func benchContext(b *testing.B, header string) (echo.Context, *http.Request) {
	b.Helper()
	e := echo.New()
	req := httptest.NewRequest(http.MethodGet, "/v1/orgs/"+benchOrg+"/tickets", nil)
	if header != "" {
		req.Header.Set(echo.HeaderAuthorization, header)
	}
	c := e.NewContext(req, httptest.NewRecorder())
	c.SetPath("/v1/orgs/:orgId/tickets")
	c.SetParamNames("orgId")
	c.SetParamValues(benchOrg)
	return c, req
}

func noop(echo.Context) error { return nil }

// BenchmarkAuthenticateMiddleware is the Authenticate middleware: header
// parsing, Verify, the identity into the request context.
func BenchmarkAuthenticateMiddleware(b *testing.B) {
	h := httpapi.Authenticate(benchVerifier(b), nil, nil, nil)(noop)
	c, req := benchContext(b, "Bearer "+benchToken(b))
	serveLoop(b, h, c, req)
}

// BenchmarkAuthorizeOrgMiddleware is the AuthorizeOrg middleware alone
// (the role read answered from memory): ID check, identity lookup, the
// principal into the request context. The target is at most 30
// allocations.
func BenchmarkAuthorizeOrgMiddleware(b *testing.B) {
	h := httpapi.AuthorizeOrg(httpapi.Authorizer{Reader: memRoles{authz.Admin}})(func(c echo.Context) error {
		_, err := httpapi.Decided(c.Request().Context())
		return err
	})
	c, req := benchContext(b, "")
	req = req.WithContext(httpapi.WithIdentity(req.Context(), authz.Identity{UserID: "u_ada", Email: "ada@example.com"}))
	serveLoop(b, h, c, req)
}

// BenchmarkAuthnAndAuthzMiddleware is both, chained as the server does.
func BenchmarkAuthnAndAuthzMiddleware(b *testing.B) {
	h := httpapi.Authenticate(benchVerifier(b), nil, nil, nil)(httpapi.AuthorizeOrg(httpapi.Authorizer{Reader: memRoles{authz.Admin}})(noop))
	c, req := benchContext(b, "Bearer "+benchToken(b))
	serveLoop(b, h, c, req)
}
