package httpapi

import (
	"fmt"
	"math"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ratelimit"
)

var (
	errLimited       = errs.E(errs.TooManyRequests, "rate_limited", "this organization is sending requests too fast; retry after the time in Retry-After")
	errCallerLimited = errs.E(errs.TooManyRequests, "rate_limited", "you are sending requests too fast; retry after the time in Retry-After")
	errUserLimited   = errs.E(errs.TooManyRequests, "rate_limited", "you are sending requests outside an organization too fast; retry after the time in Retry-After")
)

// limitTenant limits every authenticated request by its tenant: the org of
// the route, else the caller; after the authorization read, so only an
// org's members spend its budget.
func limitTenant(l *ratelimit.Limiter) echo.MiddlewareFunc {
	return limitBy(l, "org", func(c echo.Context, id authz.Identity) (string, error) {
		if org := c.Param("orgId"); org != "" {
			return orgBucket(org), errLimited
		}
		return "user:" + id.UserID, errUserLimited
	})
}

// orgBucket is the key of an org's bucket: its requests and the pages its
// exports read spend it.
func orgBucket(orgID string) string { return "org:" + orgID }

// limitCaller limits every authenticated request by its caller
// (authz.Identity.Caller), whatever org it names, before the authorization
// read. An API key's token gets here only with the server key's MAC
// (apikey.Service.ParseToken): a forged token naming a key never spends
// its org's budget.
func limitCaller(l *ratelimit.Limiter) echo.MiddlewareFunc {
	return limitBy(l, "caller", func(_ echo.Context, id authz.Identity) (string, error) {
		return "caller:" + id.Caller(), errCallerLimited
	})
}

// limitBy spends a token of the bucket key names (refusing with the error
// it gives; no bucket, "", passes uncounted) and adds the policy to the
// RateLimit header fields.
func limitBy(l *ratelimit.Limiter, policy string, key func(echo.Context, authz.Identity) (string, error)) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			id, ok := IdentityFrom(c.Request().Context())
			if l.Off() || !ok {
				return next(c)
			}
			bucket, refused := key(c, id)
			if bucket == "" {
				return next(c)
			}
			d := l.Take(c.Request().Context(), bucket)
			policyField, limitField, retryAfter := rateLimitFields(l, policy, d)
			h := c.Response().Header()
			h.Add("RateLimit-Policy", policyField)
			h.Add("RateLimit", limitField)
			if !d.Allowed {
				h.Set("Retry-After", strconv.Itoa(retryAfter))
				return refused
			}
			return next(c)
		}
	}
}

// rateLimitFields renders d as the IETF RateLimit header fields
// (draft-ietf-httpapi-ratelimit-headers-10) and a refusal's Retry-After:
// RateLimit-Policy's quota q per window w (seconds), the bucket's size and
// how long it takes to fill, and RateLimit's requests r still allowed now
// and the seconds t until the quota is whole again, or, when r is 0, until
// the next request is allowed (the 429's Retry-After).
func rateLimitFields(l *ratelimit.Limiter, policy string, d ratelimit.Decision) (policyField, limitField string, retryAfter int) {
	rate := d.Rate
	if rate <= 0 {
		rate = l.Rate()
	}
	window := max(1, int(math.Ceil(float64(d.Burst)/rate)))
	t := int(math.Ceil(d.Reset.Seconds()))
	if !d.Allowed || d.Remaining == 0 {
		t = max(1, int(math.Ceil(d.RetryAfter.Seconds())))
	}
	return fmt.Sprintf("%q;q=%d;w=%d", policy, d.Burst, window), fmt.Sprintf("%q;r=%d;t=%d", policy, d.Remaining, t), t
}
