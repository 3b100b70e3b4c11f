package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/ratelimit"
)

// memLedger is a Ledger in memory: the same GCRA as store.Limits, one TAT
// per key, and a count of the leases.
type memLedger struct {
	mu     sync.Mutex
	tat    map[string]time.Time
	leases int
	fail   error
	block  chan struct{} // when set, Lease waits on it or on its context
}

func (m *memLedger) Lease(ctx context.Context, key string, q ratelimit.Lease) (ratelimit.Grant, error) {
	if m.block != nil {
		select {
		case <-m.block:
		case <-ctx.Done():
			return ratelimit.Grant{}, ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leases++
	if m.fail != nil {
		return ratelimit.Grant{}, m.fail
	}
	base := m.tat[key]
	if base.Before(q.Now) {
		base = q.Now
	}
	avail := int(q.Now.Add(time.Duration(q.Burst)*q.Interval).Sub(base) / q.Interval)
	if avail < q.Min {
		return ratelimit.Grant{TAT: base}, nil
	}
	n := min(avail, q.Max)
	m.tat[key] = base.Add(time.Duration(n) * q.Interval)
	return ratelimit.Grant{Granted: n, TAT: m.tat[key]}, nil
}

func TestGlobal(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ledger := &memLedger{tat: map[string]time.Time{}}
	replica := func() *ratelimit.Limiter {
		return ratelimit.New(ratelimit.Options{PerSecond: 10, Burst: 50, Now: clock,
			Global: ratelimit.Global{Ledger: ledger, Block: 10, Replicas: 2}})
	}
	a, b, c := replica(), replica(), replica()

	t.Run("OK three replicas admit the burst together, one lease per block", func(t *testing.T) {
		admitted := 0
		for i := range 90 {
			if [](*ratelimit.Limiter){a, b, c}[i%3].Take(ctx, "org:A").Allowed {
				admitted++
			}
		}
		if admitted != 50 {
			t.Errorf("admitted %d of 90 at once, want the burst, 50", admitted)
		}
		if st := a.Stats(); st.Admitted.Load()+b.Stats().Admitted.Load()+c.Stats().Admitted.Load() != 50 {
			t.Errorf("Stats.Admitted: %d on a", st.Admitted.Load())
		}
	})
	t.Run("429/a refused key asks the ledger once until its retry time", func(t *testing.T) {
		before := ledger.leases
		var d ratelimit.Decision
		for range 100 {
			d = a.Take(ctx, "org:A")
		}
		if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > time.Second {
			t.Errorf("decision: %+v, want refused with a retry once a block (10 at 10/s) is back, within 1 s", d)
		}
		if got := ledger.leases - before; got > 1 {
			t.Errorf("ledger writes for 100 refused requests: %d, want at most 1", got)
		}
	})
	t.Run("OK refills at the rate, shared by the replicas", func(t *testing.T) {
		now = now.Add(2 * time.Second) // 20 tokens
		admitted := 0
		for i := range 60 {
			if [](*ratelimit.Limiter){a, b, c}[i%3].Take(ctx, "org:A").Allowed {
				admitted++
			}
		}
		if admitted != 20 {
			t.Errorf("admitted %d after 2 s at 10/s, want 20", admitted)
		}
	})
	t.Run("OK another key is unaffected", func(t *testing.T) {
		if d := b.Take(ctx, "org:B"); !d.Allowed || d.Remaining != 49 {
			t.Errorf("org:B: %+v, want allowed with 49 remaining", d)
		}
	})
	t.Run("OK at full rate one lease per block of admitted requests", func(t *testing.T) {
		before, admitted := ledger.leases, 0
		for range 200 { // 20 s at the rate, 1 request per 100 ms
			now = now.Add(100 * time.Millisecond)
			if a.Take(ctx, "org:C").Allowed {
				admitted++
			}
		}
		if got := ledger.leases - before; admitted != 200 || got > admitted/10 {
			t.Errorf("%d admitted with %d leases, want 200 with at most 20", admitted, got)
		}
	})
	t.Run("429/an overloaded key costs each replica one write per block's refill", func(t *testing.T) {
		before, admitted := ledger.leases, 0
		for range 2000 { // 20 s, 300 requests a second against a limit of 10
			now = now.Add(10 * time.Millisecond)
			for _, l := range []*ratelimit.Limiter{a, b, c} {
				if l.Take(ctx, "org:O").Allowed {
					admitted++
				}
			}
		}
		if admitted < 200 || admitted > 50+200+3*10 {
			t.Errorf("admitted %d in 20 s at 10/s with burst 50, want 200 to 280", admitted)
		}
		// Each replica asks at most once a block (1 s) while refused, and
		// once per block it is granted.
		if got, most := ledger.leases-before, 3*20+admitted/10+3; got > most {
			t.Errorf("%d ledger writes for %d admitted, want at most %d (refusals %d %d %d)", got, admitted, most, a.Stats().Refusals.Load(), b.Stats().Refusals.Load(), c.Stats().Refusals.Load())
		}
	})
	t.Run("OK the ledger failing falls back to limit/replicas, then recovers", func(t *testing.T) {
		ledger.fail = errors.New("DynamoDB is down")
		admitted := 0
		for range 100 {
			if c.Take(ctx, "org:D").Allowed {
				admitted++
			}
		}
		if admitted != 25 {
			t.Errorf("admitted %d while the ledger fails, want the fallback's burst 50/2 = 25", admitted)
		}
		if d := c.Take(ctx, "org:D"); d.Burst != 25 || d.Rate != 5 {
			t.Errorf("a fallback decision: %+v, want the fallback's bucket (burst 25 at 5/s) in its fields", d)
		}
		if st := c.Stats(); st.Failures.Load() != 1 || st.Fallback.Load() != 101 {
			t.Errorf("failures %d, fallback decisions %d; want 1 failed write, then the fallback for 101", st.Failures.Load(), st.Fallback.Load())
		}
		ledger.fail = nil
		now = now.Add(time.Second)
		if d := c.Take(ctx, "org:E"); !d.Allowed || d.Burst != 50 {
			t.Errorf("a second later: %+v, want the global bucket (burst 50) again", d)
		}
	})
	t.Run("OK a hung ledger costs one request the lease timeout, not more", func(t *testing.T) {
		hung := &memLedger{tat: map[string]time.Time{}, block: make(chan struct{})}
		l := ratelimit.New(ratelimit.Options{PerSecond: 10, Burst: 50, Now: clock,
			Global: ratelimit.Global{Ledger: hung, Timeout: 20 * time.Millisecond, Replicas: 2}})
		for range 5 {
			if d := l.Take(ctx, "org:F"); !d.Allowed {
				t.Fatalf("refused by the fallback within its burst: %+v", d)
			}
		}
		if l.Stats().Failures.Load() != 1 {
			t.Errorf("failed leases: %d, want 1 (the rest go to the fallback)", l.Stats().Failures.Load())
		}
	})
}
