package ratelimit

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Ledger keeps one global token bucket per key for every replica
// (store.Limits: one item per key in DynamoDB). The bucket is a GCRA: its
// state is the theoretical arrival time TAT, from which on it is full; at
// time now it holds (now + Burst*Interval - max(TAT, now)) / Interval
// tokens.
type Ledger interface {
	// Lease spends between Min and Max tokens of key's bucket, as many as
	// it holds, and returns how many it spent (0 when it holds fewer than
	// Min) and its TAT after.
	Lease(ctx context.Context, key string, q Lease) (Grant, error)
}

// Lease is one request to a Ledger.
type Lease struct {
	Min, Max int
	Now      time.Time
	Interval time.Duration // one token's worth of time: 1/rate
	Burst    int
	// Busy says the replica last saw the bucket less than full (its TAT
	// after Now): the Ledger tries that case's write first.
	Busy bool
}

// Grant is what a Ledger spent.
type Grant struct {
	Granted int
	TAT     time.Time
}

// Global makes a Limiter's buckets global.
type Global struct {
	Ledger Ledger
	// Block is how many tokens a replica leases at once (default 10, at
	// most the burst), all or none: one Ledger write per Block admitted
	// requests, and at most Block-1 tokens per key held unspent by each
	// replica.
	Block int
	// Timeout bounds one Lease (default 250 ms). A Lease that fails or
	// times out turns the Limiter to its fallback for Retry (default 1 s).
	Timeout, Retry time.Duration
	// Replicas is how many replicas are expected: the fallback buckets
	// hold limit/Replicas each (default 1).
	Replicas int
}

// Stats count what a global Limiter did.
type Stats struct {
	Writes, Refusals, Failures atomic.Int64 // Ledger writes: all, answered "not enough tokens", failed
	Admitted, Fallback         atomic.Int64 // requests admitted; of them and the refused, decided by the fallback
}

// Stats returns the Limiter's counters (zero for a local Limiter).
func (l *Limiter) Stats() *Stats {
	if l == nil || l.g == nil {
		return &Stats{}
	}
	return &l.g.stats
}

// global is a Limiter's global mode.
type global struct {
	o        Options
	g        Global
	interval time.Duration
	fallback *Limiter
	down     atomic.Int64 // unix ns until which the fallback decides
	stats    Stats

	mu     sync.Mutex
	leases map[string]*lease
}

// lease is what this replica knows of one key's global bucket.
type lease struct {
	mu      sync.Mutex
	tokens  int       // leased and not yet spent
	tat     time.Time // the bucket's TAT, as of the last Lease
	refused time.Time // until then, a request needing the Ledger is refused without asking it
}

func newGlobal(o Options) *global {
	g := o.Global
	if g.Block <= 0 {
		g.Block = 10
	}
	g.Block = min(g.Block, o.Burst)
	g.Timeout = cmpOr(g.Timeout, 250*time.Millisecond)
	g.Retry = cmpOr(g.Retry, time.Second)
	g.Replicas = max(g.Replicas, 1)
	fb := o
	fb.Global = Global{}
	fb.PerSecond /= float64(g.Replicas)
	fb.Burst = max(1, int(math.Ceil(float64(o.Burst)/float64(g.Replicas))))
	return &global{o: o, g: g, interval: time.Duration(float64(time.Second) / o.PerSecond),
		fallback: New(fb), leases: map[string]*lease{}}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (g *global) lease(key string, now time.Time) *lease {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.leases[key]
	if !ok {
		if len(g.leases) >= g.o.MaxTenants {
			for k, v := range g.leases { // drop idle keys (full global buckets); their unspent tokens are forgotten
				if v.mu.TryLock() {
					if !v.tat.After(now) {
						delete(g.leases, k)
					}
					v.mu.Unlock()
				}
			}
		}
		s = &lease{}
		g.leases[key] = s
	}
	return s
}

// take spends n (1 to Burst) of key's tokens: those leased before, else a
// new lease of a Block (or of n, when more) with what is left of them.
func (g *global) take(ctx context.Context, key string, n int) Decision {
	now := g.o.Now()
	if now.UnixNano() < g.down.Load() {
		return g.fall(key, n)
	}
	s := g.lease(key, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens < n && now.Before(s.refused) {
		return g.decide(s, false, n, now)
	}
	if s.tokens < n {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.g.Timeout)
		want := max(g.g.Block, n) - s.tokens // whole blocks only: one write per block admitted, even at the limit
		gr, err := g.g.Ledger.Lease(lctx, key, Lease{Min: want, Max: want, Now: now,
			Interval: g.interval, Burst: g.o.Burst, Busy: s.tat.After(now)})
		cancel()
		g.stats.Writes.Add(1)
		if err != nil {
			g.stats.Failures.Add(1)
			g.down.Store(now.Add(g.g.Retry).UnixNano())
			return g.fall(key, n)
		}
		s.tat = gr.TAT
		s.tokens += gr.Granted
		if s.tokens < n {
			// Refused: ask again once the bucket holds a block (at most a
			// second from now, at least when it holds n), so an overloaded
			// key costs each replica one write per block, not per token.
			g.stats.Refusals.Add(1)
			s.refused = now.Add(max(g.until(s, n, now), min(g.until(s, g.g.Block, now), time.Second)))
			return g.decide(s, false, n, now)
		}
	}
	s.tokens -= n
	g.stats.Admitted.Add(1)
	return g.decide(s, true, n, now)
}

// fall decides by the fallback bucket.
func (g *global) fall(key string, n int) Decision {
	g.stats.Fallback.Add(1)
	d := g.fallback.spend(key, n)
	if d.Allowed {
		g.stats.Admitted.Add(1)
	}
	return d
}

// decide describes key's global bucket as this replica knows it: its
// tokens as of the last Lease, refilled since, plus the ones leased here.
func (g *global) decide(s *lease, allowed bool, n int, now time.Time) Decision {
	base := s.tat
	if base.Before(now) {
		base = now
	}
	window := time.Duration(g.o.Burst) * g.interval
	held := float64(now.Add(window).Sub(base))/float64(g.interval) + float64(s.tokens)
	d := Decision{Allowed: allowed, Limit: int(math.Ceil(g.o.PerSecond)), Burst: g.o.Burst, Rate: g.o.PerSecond,
		Reset: base.Sub(now)}
	if allowed { // a refused request was refused: nothing remains for it here
		d.Remaining = max(0, min(g.o.Burst, int(held)))
	}
	if need := float64(n); !allowed && held < need {
		d.RetryAfter = max(time.Duration((need-held)*float64(g.interval)), s.refused.Sub(now))
	} else if held < 1 {
		d.RetryAfter = time.Duration((1 - held) * float64(g.interval))
	}
	return d
}

// until is how long until key's global bucket holds n tokens, as this
// replica last saw it.
func (g *global) until(s *lease, n int, now time.Time) time.Duration {
	return max(0, s.tat.Add(time.Duration(n-g.o.Burst)*g.interval).Sub(now))
}
