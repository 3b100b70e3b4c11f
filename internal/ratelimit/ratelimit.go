// Package ratelimit keeps one tenant from using up the service: each org
// (or, outside any org, each caller) gets its own token bucket, so a noisy
// tenant is throttled while the others are not. A second Limiter, used
// through PerCaller before the authorization read, gives each caller a
// bucket whatever org it names, so a token probing other tenants' orgs is
// throttled too. Responses carry the IETF RateLimit header fields; a
// refused request gets 429 with Retry-After.
//
// The buckets live in this process: with N replicas a tenant's effective
// limit is N times the configured one.
package ratelimit

import (
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/errs"
)

// Options set the limit.
type Options struct {
	PerSecond float64 // sustained requests per second per tenant (0 = no limit)
	Burst     int     // bucket size
	Now       clock.Clock
	// MaxTenants bounds memory: beyond it, idle buckets are dropped.
	MaxTenants int
}

// Limiter is a set of per-tenant buckets.
type Limiter struct {
	o       Options
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

// New returns a Limiter.
func New(o Options) *Limiter {
	if o.Burst < 1 {
		o.Burst = 1
	}
	if o.MaxTenants == 0 {
		o.MaxTenants = 100_000
	}
	o.Now = clock.Or(o.Now)
	return &Limiter{o: o, buckets: map[string]*rate.Limiter{}}
}

func (l *Limiter) bucket(key string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= l.o.MaxTenants {
			now := l.o.Now()
			for k, v := range l.buckets { // drop full (idle) buckets
				if v.TokensAt(now) >= float64(l.o.Burst) {
					delete(l.buckets, k)
				}
			}
		}
		b = rate.NewLimiter(rate.Limit(l.o.PerSecond), l.o.Burst)
		l.buckets[key] = b
	}
	return b
}

var (
	errLimited       = errs.E(errs.TooManyRequests, "rate_limited", "this organization is sending requests too fast; retry after the time in Retry-After")
	errCallerLimited = errs.E(errs.TooManyRequests, "rate_limited", "you are sending requests too fast; retry after the time in Retry-After")
)

// Middleware limits every authenticated request by its tenant: the org of
// the route, else the caller. Unauthenticated requests pass through (they
// were refused or are public probes).
func (l *Limiter) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if l.o.PerSecond <= 0 {
				return next(c)
			}
			id, ok := authz.IdentityFrom(c.Request().Context())
			if !ok {
				return next(c)
			}
			key := "user:" + id.UserID
			if org := c.Param("orgId"); org != "" {
				key = "org:" + org
			}
			if err := l.take(c, key, errLimited); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// PerCaller limits every authenticated request by its caller (the token's
// subject), whatever org it names. Placed before the authorization read,
// it bounds what one token can make the server read: requests for other
// tenants' orgs, which all end in 404, spend the caller's budget, not
// theirs and not DynamoDB's. Unauthenticated requests pass through.
func (l *Limiter) PerCaller() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if l.o.PerSecond <= 0 {
				return next(c)
			}
			id, ok := authz.IdentityFrom(c.Request().Context())
			if !ok {
				return next(c)
			}
			if err := l.take(c, "caller:"+id.UserID, errCallerLimited); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// take spends one token of key's bucket and sets the RateLimit headers;
// refused is returned (with Retry-After set) when the bucket is empty.
func (l *Limiter) take(c echo.Context, key string, refused error) error {
	b := l.bucket(key)
	now := l.o.Now()
	allowed := b.AllowN(now, 1)
	tokens := b.TokensAt(now)
	h := c.Response().Header()
	h.Set("RateLimit-Limit", strconv.Itoa(int(math.Ceil(l.o.PerSecond))))
	h.Set("RateLimit-Remaining", strconv.Itoa(max(0, int(tokens))))
	untilFull := time.Duration((float64(l.o.Burst) - tokens) / l.o.PerSecond * float64(time.Second))
	h.Set("RateLimit-Reset", strconv.Itoa(int(math.Ceil(untilFull.Seconds()))))
	if !allowed {
		wait := time.Duration((1 - tokens) / l.o.PerSecond * float64(time.Second))
		h.Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
		return refused
	}
	return nil
}
