// Package ratelimit keeps one tenant from using up the service: each org
// (or, outside any org, each caller) gets its own token bucket, so a noisy
// tenant is throttled while the others are not. A second Limiter, used
// before the authorization read, gives each caller a bucket whatever org it
// names, so a token probing other tenants' orgs is throttled too. The HTTP
// layer turns a Decision into the IETF RateLimit header fields and, for a
// refused request, 429 with Retry-After.
//
// With a Ledger (global.go) the buckets are global: one bucket per key kept
// in DynamoDB, which every replica spends from a balance it keeps in the
// background, so N replicas together admit what one would and no request
// waits for the Ledger while its balance pays. Without one they live in
// this process, and N replicas admit N times the limit.
package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/tenantd/tenantd/internal/clock"
)

// Options set the limit.
type Options struct {
	PerSecond float64 // sustained requests per second per tenant (0 = no limit)
	Burst     int     // bucket size
	Now       clock.Clock
	// MaxTenants bounds memory: beyond it, idle buckets are dropped.
	MaxTenants int
	// Global, when its Ledger is set, makes the buckets global (global.go).
	Global Global
}

// Limiter is a set of per-tenant buckets.
type Limiter struct {
	o       Options
	mu      sync.Mutex
	buckets map[string]*bucket
	g       *global // nil: the buckets are this process's
}

// bucket is one token bucket: tokens as of last, refilled at the
// limiter's rate up to its burst.
type bucket struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// at refills b up to now; b.mu is held.
func (b *bucket) at(now time.Time, perSecond float64, burst int) {
	if now.After(b.last) {
		b.tokens = min(float64(burst), b.tokens+now.Sub(b.last).Seconds()*perSecond)
	}
	b.last = now // a clock stepped back refills from now on, not an hour later
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
	l := &Limiter{o: o, buckets: map[string]*bucket{}}
	if o.Global.Ledger != nil && o.PerSecond > 0 {
		l.g = newGlobal(o)
	}
	return l
}

func (l *Limiter) bucket(key string, now time.Time) *bucket {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= l.o.MaxTenants {
			for k, v := range l.buckets { // drop full (idle) buckets
				v.mu.Lock()
				v.at(now, l.o.PerSecond, l.o.Burst)
				full := v.tokens >= float64(l.o.Burst)
				v.mu.Unlock()
				if full {
					delete(l.buckets, k)
				}
			}
		}
		b = &bucket{tokens: float64(l.o.Burst), last: now}
		l.buckets[key] = b
	}
	return b
}

// Decision is what one Take found.
type Decision struct {
	Allowed bool
	// Limit is the sustained rate (requests per second, rounded up) and
	// Burst the bucket's size; Rate the rate unrounded.
	Limit, Burst int
	Rate         float64
	// Remaining is how many requests the bucket holds now (a global
	// limiter: how many more this replica admits before it needs the
	// Ledger, never more).
	Remaining int
	// Reset is how long until the bucket is full again; RetryAfter, when
	// the bucket holds less than one request, how long until it does.
	Reset, RetryAfter time.Duration
}

// Off reports whether the limiter limits nothing.
func (l *Limiter) Off() bool { return l == nil || l.o.PerSecond <= 0 }

// Take spends one request of key's bucket, if it has one.
func (l *Limiter) Take(ctx context.Context, key string) Decision { return l.TakeN(ctx, key, 1) }

// TakeN spends n requests' worth of key's bucket at once (a GraphQL
// request costs by its complexity), if it has them; n is capped at the
// burst, so a costly request waits for a full bucket, never forever. A
// global limiter waits for its Ledger only when the key's balance cannot
// pay, and at most Global.Timeout.
func (l *Limiter) TakeN(ctx context.Context, key string, n int) Decision {
	if l.Off() {
		return Decision{Allowed: true}
	}
	if l.g != nil {
		return l.g.take(ctx, key, min(max(n, 1), l.o.Burst))
	}
	return l.spend(key, n)
}

func (l *Limiter) spend(key string, n int) Decision {
	n = min(max(n, 1), l.o.Burst)
	now := l.o.Now()
	b := l.bucket(key, now)
	b.mu.Lock()
	b.at(now, l.o.PerSecond, l.o.Burst)
	allowed := b.tokens >= float64(n)
	if allowed {
		b.tokens -= float64(n)
	}
	tokens := b.tokens
	b.mu.Unlock()
	d := Decision{Allowed: allowed, Limit: int(math.Ceil(l.o.PerSecond)), Burst: l.o.Burst, Rate: l.o.PerSecond, Remaining: max(0, int(tokens)),
		Reset: time.Duration((float64(l.o.Burst) - tokens) / l.o.PerSecond * float64(time.Second))}
	if tokens < float64(n) && !allowed {
		d.RetryAfter = time.Duration((float64(n) - tokens) / l.o.PerSecond * float64(time.Second))
	} else if tokens < 1 {
		d.RetryAfter = time.Duration((1 - tokens) / l.o.PerSecond * float64(time.Second))
	}
	return d
}

// Buckets is how many buckets the limiter holds.
func (l *Limiter) Buckets() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// Burst is the bucket's size.
func (l *Limiter) Burst() int { return l.o.Burst }

// Rate is the sustained rate, in requests per second.
func (l *Limiter) Rate() float64 { return l.o.PerSecond }
