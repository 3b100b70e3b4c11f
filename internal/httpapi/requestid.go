package httpapi

import (
	"crypto/rand"
	"regexp"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/audit"
)

// clientRequestID is a client's X-Request-Id that may be recorded.
var clientRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// requestID gives every request the server's own random id, answered in
// X-Request-Id and carried in the context. A client's X-Request-Id never
// replaces it: one that matches clientRequestID is carried beside it.
func requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := rand.Text()
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		r := c.Request()
		ctx := audit.WithRequestID(r.Context(), id)
		if vs := r.Header.Values(echo.HeaderXRequestID); len(vs) == 1 && clientRequestID.MatchString(vs[0]) {
			ctx = audit.WithClientRequestID(ctx, vs[0])
		}
		c.SetRequest(r.WithContext(ctx))
		return next(c)
	}
}
