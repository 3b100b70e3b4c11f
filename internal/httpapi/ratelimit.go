package httpapi

import (
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/authz"
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
	return limitBy(l, errLimited, "org", func(c echo.Context, userID string) string {
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
	return limitBy(l, errCallerLimited, "caller", func(_ echo.Context, userID string) string { return "caller:" + userID })
}

// limitBy spends a token of the bucket key names, and says so in the
// IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers-10):
// RateLimit-Policy lists each policy the request went through as a quota q
// per window w (seconds): the bucket's size and how long it takes to fill;
// RateLimit lists, for each, the requests r still allowed now and the
// seconds t until that quota is whole again, or, when r is 0, until the
// next request is allowed (the 429's Retry-After).
func limitBy(l *ratelimit.Limiter, refused error, policy string, key func(echo.Context, string) string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if l.Off() {
				return next(c)
			}
			id, ok := IdentityFrom(c.Request().Context())
			if !ok {
				return next(c)
			}
			// A GET whose authorization read is in flight reserves its
			// token now, so that a refused request never makes its own
			// read, and gives it back if the read refuses the caller:
			// only the org's members spend its quota, and a stranger's
			// 404 carries none of the org's RateLimit fields.
			if p, ok := pendingFrom(c.Request().Context()); ok {
				d, refund := l.Reserve(key(c, id.UserID))
				if !d.Allowed {
					if _, err := p.Await(); err != nil {
						return err
					}
					return rateLimited(c, l, refused, policy, d)
				}
				var (
					once sync.Once
					pr   authz.Principal
					err  error
				)
				gated := authz.NewPending(p.Identity, p.OrgID, func() (authz.Principal, error) {
					once.Do(func() {
						if pr, err = p.Await(); err != nil {
							refund()
							return
						}
						_ = rateLimited(c, l, refused, policy, d)
					})
					return pr, err
				})
				c.SetRequest(c.Request().WithContext(withPending(c.Request().Context(), gated)))
				defer gated.Await() //nolint:errcheck // settles the reservation of a handler that never asked
				return next(c)
			}
			if err := take(c, l, refused, policy, key(c, id.UserID)); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// take spends a token of bucket and writes the RateLimit header fields.
func take(c echo.Context, l *ratelimit.Limiter, refused error, policy, bucket string) error {
	return rateLimited(c, l, refused, policy, l.Take(bucket))
}

// rateLimited writes the RateLimit header fields of d and returns refused
// if d did not allow the request.
func rateLimited(c echo.Context, l *ratelimit.Limiter, refused error, policy string, d ratelimit.Decision) error {
	h := c.Response().Header()
	window := max(1, int(math.Ceil(float64(d.Burst)/l.Rate())))
	h.Add("RateLimit-Policy", fmt.Sprintf("%q;q=%d;w=%d", policy, d.Burst, window))
	t := int(math.Ceil(d.Reset.Seconds()))
	if !d.Allowed || d.Remaining == 0 {
		t = max(1, int(math.Ceil(d.RetryAfter.Seconds())))
	}
	h.Add("RateLimit", fmt.Sprintf("%q;r=%d;t=%d", policy, d.Remaining, t))
	if !d.Allowed {
		h.Set("Retry-After", strconv.Itoa(t))
		return refused
	}
	return nil
}
