package httpapi

import (
	"math"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ratelimit"
)

var (
	errLimited       = errs.E(errs.TooManyRequests, "rate_limited", "this organization is sending requests too fast; retry after the time in Retry-After")
	errCallerLimited = errs.E(errs.TooManyRequests, "rate_limited", "you are sending requests too fast; retry after the time in Retry-After")
)

// limitTenant limits every authenticated request by its tenant: the org of
// the route, else the caller. It runs after the authorization read, so only
// an org's members spend its budget. Unauthenticated requests pass (they
// were refused, or are public probes).
func limitTenant(l *ratelimit.Limiter) echo.MiddlewareFunc {
	return limitBy(l, errLimited, func(c echo.Context, userID string) string {
		if org := c.Param("orgId"); org != "" {
			return "org:" + org
		}
		return "user:" + userID
	})
}

// limitCaller limits every authenticated request by its caller (the
// token's subject), whatever org it names. Placed before the authorization
// read, it bounds what one token can make the server read: requests for
// other tenants' orgs, which all end in 404, spend the caller's budget, not
// theirs and not DynamoDB's.
func limitCaller(l *ratelimit.Limiter) echo.MiddlewareFunc {
	return limitBy(l, errCallerLimited, func(_ echo.Context, userID string) string { return "caller:" + userID })
}

func limitBy(l *ratelimit.Limiter, refused error, key func(echo.Context, string) string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if l.Off() {
				return next(c)
			}
			id, ok := IdentityFrom(c.Request().Context())
			if !ok {
				return next(c)
			}
			d := l.Take(key(c, id.UserID))
			h := c.Response().Header()
			h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
			h.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
			h.Set("RateLimit-Reset", strconv.Itoa(int(math.Ceil(d.Reset.Seconds()))))
			if !d.Allowed {
				h.Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(d.RetryAfter.Seconds())))))
				return refused
			}
			return next(c)
		}
	}
}
