package ratelimit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
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

func newMemLedger() *memLedger { return &memLedger{tat: map[string]time.Time{}} }

func (m *memLedger) Lease(ctx context.Context, key string, q ratelimit.Lease) (ratelimit.Grant, error) {
	m.mu.Lock()
	block := m.block
	m.mu.Unlock()
	if block != nil {
		select {
		case <-block:
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

func (m *memLedger) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leases
}

// cluster is replicas sharing one ledger and a fake clock; take sends a
// request to one of them and lets the lease it started land (as when
// requests are further apart than a lease's round trip).
type cluster struct {
	ledger   *memLedger
	now      time.Time
	replicas []*ratelimit.Limiter
}

func newCluster(n int, rate float64, burst, block int) *cluster {
	c := &cluster{ledger: newMemLedger(), now: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	for range n {
		c.replicas = append(c.replicas, ratelimit.New(ratelimit.Options{PerSecond: rate, Burst: burst, Now: func() time.Time { return c.now },
			Global: ratelimit.Global{Ledger: c.ledger, Block: block, Replicas: n}}))
	}
	return c
}

func (c *cluster) take(i int, key string) ratelimit.Decision {
	l := c.replicas[i%len(c.replicas)]
	d := l.Take(context.Background(), key)
	l.Settle()
	return d
}

func TestGlobal(t *testing.T) {
	const rate, burst, block = 10, 50, 10 // a replica's block: min(10, 50/3) = 10; 5 held, 5 on credit at most
	c := newCluster(3, rate, burst, block)

	t.Run("OK three replicas admit the burst together, and at most a block each beyond it", func(t *testing.T) {
		admitted := 0
		for i := range 90 {
			if c.take(i, "org:A").Allowed {
				admitted++
			}
		}
		t.Logf("admitted %d of 90", admitted)
		if admitted < burst || admitted > burst+3*block {
			t.Errorf("admitted %d of 90 at once, want the burst, %d, and at most a block per replica more", admitted, burst)
		}
		var st int64
		for _, l := range c.replicas {
			st += l.Stats().Admitted.Load()
		}
		if st != int64(admitted) {
			t.Errorf("Stats.Admitted: %d, admitted %d", st, admitted)
		}
	})
	t.Run("429/a refused key asks the ledger once until its retry time", func(t *testing.T) {
		before := c.ledger.count()
		var d ratelimit.Decision
		for range 100 {
			d = c.take(0, "org:A")
		}
		if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > time.Second {
			t.Errorf("decision: %+v, want refused with a retry within 1 s", d)
		}
		if got := c.ledger.count() - before; got > 1 {
			t.Errorf("ledger writes for 100 refused requests: %d, want at most 1", got)
		}
	})
	t.Run("OK refills at the rate, shared by the replicas", func(t *testing.T) {
		c.now = c.now.Add(5 * time.Second) // 50 tokens, less what the replicas owed
		admitted := 0
		for i := range 300 {
			if c.take(i, "org:A").Allowed {
				admitted++
			}
		}
		if admitted > burst+3*block {
			t.Errorf("admitted %d after 5 s at 10/s, want at most the burst and a block per replica", admitted)
		}
	})
	t.Run("OK another key is unaffected", func(t *testing.T) {
		if d := c.take(1, "org:B"); !d.Allowed || d.Remaining != 4 {
			t.Errorf("org:B: %+v, want allowed with 4 remaining (the replica's credit, 5, less 1)", d)
		}
	})
	t.Run("429/an overloaded key costs each replica about a write a second", func(t *testing.T) {
		before, admitted := c.ledger.count(), 0
		for range 2000 { // 20 s, 300 requests a second against a limit of 10
			c.now = c.now.Add(10 * time.Millisecond)
			for i := range 3 {
				if c.take(i, "org:O").Allowed {
					admitted++
				}
			}
		}
		if admitted < 20*rate || admitted > burst+20*rate+3*block {
			t.Errorf("admitted %d in 20 s at 10/s with burst 50, want 200 to 280", admitted)
		}
		t.Logf("overloaded: %d admitted, %d writes", admitted, c.ledger.count()-before)
		if got, most := c.ledger.count()-before, 3*2*20+3; got > most {
			t.Errorf("%d ledger writes for %d admitted, want at most %d", got, admitted, most)
		}
	})
}

// TestGlobalSteadyRate: a tenant at a steady 100/s (its limit), on one
// replica or split over two, costs at most 0.025 lease writes a request
// per key (0.05 a REST request, which spends the caller's key and the
// org's), and is never refused: each replica leases ahead what the key
// spends in a few seconds, within half its block, once it spent what it
// held.
func TestGlobalSteadyRate(t *testing.T) {
	for _, n := range []int{1, 2} {
		c := newCluster(n, 100, 200, 100)
		refused := 0
		for i := range 3000 { // 30 s
			c.now = c.now.Add(10 * time.Millisecond)
			if !c.take(i, "org:S").Allowed {
				refused++
			}
		}
		if per := float64(c.ledger.count()) / 3000; refused > 0 || per > 0.025 {
			t.Errorf("%d replicas: %d of 3000 refused, %.3f lease writes a request; want none refused, at most 0.025", n, refused, per)
		} else {
			t.Logf("%d replicas: %.3f lease writes a request", n, per)
		}
	}
}

// TestGlobalUnderLimit: a tenant sending at half its limit, round-robin
// over three replicas, is never refused, down to limits of 1/s.
func TestGlobalUnderLimit(t *testing.T) {
	for _, plan := range []struct{ rate, burst int }{{1, 1}, {2, 4}, {5, 10}, {20, 40}} {
		c := newCluster(3, float64(plan.rate), plan.burst, 100)
		gap := time.Duration(float64(2*time.Second) / float64(plan.rate))
		for i := range 120 {
			c.now = c.now.Add(gap)
			if d := c.take(i, "org:U"); !d.Allowed {
				t.Errorf("%d/s, burst %d: request %d (one each %v) refused: %+v", plan.rate, plan.burst, i, gap, d)
				break
			}
		}
	}
}

// TestGlobalRemainingIsKept: what RateLimit says remains, the same replica
// admits, even with its ledger hung.
func TestGlobalRemainingIsKept(t *testing.T) {
	c := newCluster(2, 10, 50, 20)
	l := c.replicas[0]
	c.take(0, "org:R")
	c.ledger.block = make(chan struct{})
	defer close(c.ledger.block)
	d := l.Take(context.Background(), "org:R")
	for i := range d.Remaining {
		if e := l.Take(context.Background(), "org:R"); !e.Allowed {
			t.Fatalf("RateLimit said %d remain; request %d after it refused: %+v", d.Remaining, i+1, e)
		}
	}
}

// TestGlobalFallback: a failing or hung ledger costs a request at most one
// lease timeout, once; meanwhile each replica admits at most its credit
// (half its block) beyond what it held, so the global bound holds; the
// episode's start and end are logged once each.
func TestGlobalFallback(t *testing.T) {
	var logs bytes.Buffer
	ledger := newMemLedger()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	l := ratelimit.New(ratelimit.Options{PerSecond: 10, Burst: 50, Now: clock, Global: ratelimit.Global{Ledger: ledger, Block: 20,
		Timeout: 30 * time.Millisecond, Replicas: 2, Log: slog.New(slog.NewTextHandler(&logs, nil))}})
	ctx := context.Background()

	t.Run("OK a failing ledger: credit within the block, then refused", func(t *testing.T) {
		ledger.fail = errors.New("DynamoDB is down")
		admitted := 0
		var last ratelimit.Decision
		for range 100 {
			if last = l.Take(ctx, "org:D"); last.Allowed {
				admitted++
			}
			l.Settle()
		}
		if admitted != 10 {
			t.Errorf("admitted %d while the ledger fails, want the replica's credit, 10 (half its block of 20)", admitted)
		}
		if last.Allowed || last.RetryAfter <= 0 {
			t.Errorf("past the credit: %+v, want refused with a Retry-After", last)
		}
		if st := l.Stats(); st.Failures.Load() < 1 || st.Fallback.Load() < 90 {
			t.Errorf("failures %d, fallback decisions %d", st.Failures.Load(), st.Fallback.Load())
		}
	})
	t.Run("OK recovered, the debt is charged", func(t *testing.T) {
		ledger.mu.Lock()
		ledger.fail = nil
		ledger.mu.Unlock()
		mu.Lock()
		now = now.Add(2 * time.Second)
		mu.Unlock()
		if d := l.Take(ctx, "org:E"); !d.Allowed {
			t.Errorf("another key once the ledger answers: %+v", d)
		}
		l.Settle()
		if d := l.Take(ctx, "org:D"); !d.Allowed {
			t.Errorf("the failed key once the ledger answers: %+v", d)
		}
		l.Settle()
		ledger.mu.Lock()
		spent := ledger.tat["org:D"].Sub(clock()) / (100 * time.Millisecond)
		ledger.mu.Unlock()
		if spent < 10 {
			t.Errorf("the ledger charged %d tokens to org:D, want at least the 10 spent on credit", spent)
		}
	})
	t.Run("OK a hung ledger costs one request the lease timeout, once", func(t *testing.T) {
		ledger.mu.Lock()
		ledger.block = make(chan struct{})
		ledger.mu.Unlock()
		before := l.Stats().Waits.Load()
		for i := range 30 { // more than the credit: the balance cannot pay
			key := "org:H"
			if i%2 == 1 {
				key = "org:I"
			}
			if d := l.TakeN(ctx, key, 15); d.Allowed {
				t.Fatalf("request %d admitted with a hung ledger beyond the credit: %+v", i, d)
			}
		}
		if waits := l.Stats().Waits.Load() - before; waits != 1 {
			t.Errorf("%d of 30 requests waited for the hung ledger, want 1: the first one's timeout starts the fallback", waits)
		}
		ledger.mu.Lock()
		close(ledger.block)
		ledger.block = nil
		ledger.mu.Unlock()
		l.Settle()
		mu.Lock()
		now = now.Add(5 * time.Second)
		mu.Unlock()
		l.Take(ctx, "org:J") // a lease that answers in time ends the episode
		l.Settle()
	})
	t.Run("OK each episode is logged once when it starts and once when it ends", func(t *testing.T) {
		starts, ends := strings.Count(logs.String(), "answers late"), strings.Count(logs.String(), "answers in time again")
		if starts != 2 || ends != 2 {
			t.Errorf("%d starts and %d ends logged for two episodes:\n%s", starts, ends, logs.String())
		}
	})
}

// TestGlobalFallbackOneKey: a replica whose only key spent its credit
// while the ledger failed is admitted again once the ledger answers,
// without another key's lease to end the episode.
func TestGlobalFallbackOneKey(t *testing.T) {
	ledger := newMemLedger()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	l := ratelimit.New(ratelimit.Options{PerSecond: 10, Burst: 50, Now: clock, Global: ratelimit.Global{Ledger: ledger, Block: 20,
		Timeout: 30 * time.Millisecond, Replicas: 2}})
	ctx := context.Background()
	ledger.fail = errors.New("DynamoDB is down")
	for range 30 {
		l.Take(ctx, "org:K")
		l.Settle()
	}
	ledger.mu.Lock()
	ledger.fail = nil
	ledger.mu.Unlock()
	mu.Lock()
	now = now.Add(5 * time.Second)
	mu.Unlock()
	admitted := 0
	for range 3 {
		if l.Take(ctx, "org:K").Allowed {
			admitted++
		}
		l.Settle()
	}
	if admitted == 0 {
		t.Errorf("org:K refused 3 times after the ledger recovered, 5 s on: %+v", l.Take(ctx, "org:K"))
	}
}
